# Sourced by the benchmark scripts: starts moto's S3 server on a free loopback port with a
# bucket named "bench" (credentials bench/bench), and stops it when the script exits.
# Sets: port, moto_pid, work (a temporary folder removed on exit; moto logs to $work/moto.log).
python3 -c "import moto.server, boto3" 2>/dev/null || python3 -m pip install --quiet 'moto[server]' boto3
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
