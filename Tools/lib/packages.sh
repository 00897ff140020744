# Sourced by Tools/test and Tools/main: installs the Debian packages given that are missing.
# The nginx package would start a system-wide server on port 80: service starts are denied
# during the install (policy-rc.d), so nothing listens beyond what the tests start.
install_packages() {
    local need=()
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
    done
    [ ${#need[@]} -gt 0 ] || return 0
    echo "Installing: ${need[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    local policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy"
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
    [ -z "$policy" ] || $sudo rm -f "$policy"
}

# The system libraries Buckia links (the design card's five, plus zlib).
BUCKIA_LIBRARIES=(libsqlite3-dev libssl-dev zlib1g-dev libcurl4-openssl-dev libxml2-dev)
