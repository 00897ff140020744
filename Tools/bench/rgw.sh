# Sourced by the benchmark scripts instead of moto.sh: starts a one-OSD Ceph cluster with a
# RADOS Gateway on a free loopback port (Tests/Emulators/ceph_rgw.sh start), makes a bucket
# named "bench", and stops the cluster when the script exits. Unlike moto, RGW checks every
# signature and stores the data in a real object store (memstore: in RAM).
# Sets: port, access_key, secret_key, work (a temporary folder removed on exit), and an empty
# $work/moto.log so request counts read as 0 (RGW keeps no such log here).
command -v radosgw >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq ceph-mon ceph-mgr ceph-osd radosgw ceph-common; }
python3 -c "import boto3" 2>/dev/null || python3 -m pip install --quiet boto3
work=$(mktemp -d)
rgw_dir=$work/rgw
trap 'Tests/Emulators/ceph_rgw.sh stop "$rgw_dir" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
started=$(Tests/Emulators/ceph_rgw.sh start "$rgw_dir" | tail -1)
port=$(echo "$started" | sed -n 's/.*PORT=\([0-9]*\).*/\1/p')
access_key=$(echo "$started" | sed -n 's/.*ACCESS_KEY=\([^ ]*\).*/\1/p')
secret_key=$(echo "$started" | sed -n 's/.*SECRET_KEY=\([^ ]*\).*/\1/p')
[ -n "$port" ] && [ -n "$access_key" ] || { echo "Ceph RGW did not start: $started (logs in $rgw_dir/log)" >&2; exit 1; }
: > "$work/moto.log"
python3 - "$port" "$access_key" "$secret_key" <<'PY'
import sys, boto3
boto3.client("s3", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}", aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3],
             region_name="us-east-1").create_bucket(Bucket="bench")
PY
