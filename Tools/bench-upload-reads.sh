#!/usr/bin/env bash
# Bytes read from disk per byte uploaded to S3, with and without a known MD5, on a moto server
# this script starts on 127.0.0.1 and stops. Installs moto from PyPI if it is missing.
#
#   Tools/bench-upload-reads.sh [SIZES_MIB]        (default 32,96: one single PUT, one multipart)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-32,96}
command -v swift >/dev/null 2>&1 || export PATH="$PATH:/opt/swift/usr/bin"
python3 -c "import moto.server, boto3" 2>/dev/null || python3 -m pip install --quiet 'moto[server]' boto3
swift build -c release --product buckia-bench >/dev/null
work=$(mktemp -d)
trap 'kill "${moto_pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
moto_server -H 127.0.0.1 -p "$port" > "$work/moto.log" 2>&1 &
moto_pid=$!
for _ in $(seq 1 100); do curl -s "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.2; done
python3 - "$port" <<'PY'
import sys, boto3
boto3.client("s3", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}", aws_access_key_id="bench", aws_secret_access_key="bench",
             region_name="us-east-1").create_bucket(Bucket="bench")
PY
.build/release/buckia-bench upload-reads --endpoint "http://127.0.0.1:$port" --bucket bench --sizes-mib "$sizes"
