#!/usr/bin/env bash
# A real S3 server for tests: a one-OSD Ceph cluster (memstore: data in RAM) and a RADOS
# Gateway on 127.0.0.1, everything under DIR, from Debian's packages
# (apt-get install ceph-mon ceph-mgr ceph-osd radosgw ceph-common).
#
#   Tests/Emulators/ceph_rgw.sh serve DIR   # what the tests run: see below
#   Tests/Emulators/ceph_rgw.sh start DIR   # by hand: prints PORT=… ACCESS_KEY=… SECRET_KEY=…
#   Tests/Emulators/ceph_rgw.sh stop DIR    # stops what `start` left running
#
# BUCKIA_RGW_MEMSTORE_GIB (default 3) sizes the OSD's memstore, in RAM: RGW frees a deleted
# object's data only at garbage collection, hours later, so a run that writes gigabytes needs
# room for all of it. A full OSD makes writes wait, not fail.
#
# `serve` runs every daemon in the foreground as its child, prints one JSON line as moto_server.py
# does ({"endpoint", "accessKeyId", "secretAccessKey", "region"}, or {"error", "missing"}), and
# stops the cluster and removes DIR when its stdin reaches EOF (the test process ended, however
# it ended), on SIGTERM, or after an hour.
#
# Unlike moto, RGW checks SigV4 signatures on every request (presigned ones too) and Content-MD5,
# and Ceph 16 compares If-Match with the stored ETag without quotes. cephx stays on: RGW would
# not start with auth none (-13). Seen here: answering in 12 to 15 s.
set -euo pipefail
ACTION=${1:?serve, start or stop}
DIR=${2:?a folder for the cluster}
if [ "$ACTION" = stop ]; then
    for pidfile in "$DIR"/run/*.pid; do
        [ -e "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
    exit 0
fi
emit_error() { printf '{"error": "%s", "missing": %s}\n' "$1" "$2"; exit 3; }
if [ "$ACTION" = serve ]; then
    for tool in ceph-mon ceph-mgr ceph-osd radosgw radosgw-admin ceph-authtool monmaptool ceph; do
        command -v "$tool" >/dev/null 2>&1 || emit_error "$tool is not installed; apt-get install ceph-mon ceph-mgr ceph-osd radosgw ceph-common" true
    done
fi
mkdir -p "$DIR"/{mon,osd,mgr,run,log,crash,rgw}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MONPORT=$(free_port); RGWPORT=$(free_port)
FSID=$(python3 -c 'import uuid; print(uuid.uuid4())')
CONF=$DIR/ceph.conf
cat > "$CONF" <<CONF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MONPORT
public addr = 127.0.0.1
keyring = $DIR/keyring
auth allow insecure global id reclaim = false
mon osd full ratio = 0.97
mon osd nearfull ratio = 0.95
mon data avail warn = 1
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd pool default pg autoscale mode = off
osd pool default pg num = 8
osd pool default pgp num = 8
osd objectstore = memstore
memstore device bytes = $((${BUCKIA_RGW_MEMSTORE_GIB:-3} << 30))
osd crush chooseleaf type = 0
run dir = $DIR/run
log file = $DIR/log/\$name.log
mon cluster log file = $DIR/log/\$cluster.log
crash dir = $DIR/crash
rgw data = $DIR/rgw
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
mon data = $DIR/mon/\$cluster-\$id
osd data = $DIR/osd/\$cluster-\$id
mgr data = $DIR/mgr/\$cluster-\$id
rgw frontends = beast endpoint=127.0.0.1:$RGWPORT
rgw dns name = 127.0.0.1
debug rgw = 1
CONF
# In serve mode every daemon runs in the foreground (-f) as a child of this script.
FG=()
CHILDREN=()
if [ "$ACTION" = serve ]; then
    FG=(-f)
    cleanup() {
        trap - EXIT TERM INT
        [ ${#CHILDREN[@]} -gt 0 ] && kill -9 "${CHILDREN[@]}" 2>/dev/null || true
        wait 2>/dev/null || true
        rm -rf "$DIR"
    }
    trap cleanup EXIT
    trap 'exit 0' TERM INT
fi
daemon() {
    if [ "$ACTION" = serve ]; then
        "$@" "${FG[@]}" >>"$DIR/log/daemons.out" 2>&1 &
        CHILDREN+=($!)
    else
        "$@"
    fi
}
quiet() { "$@" >>"$DIR/log/setup.out" 2>&1 || emit_error "$1 failed; see $DIR/log" false; }
quiet ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n mon. --cap mon 'allow *'
for entity in client.admin mgr.x client.rgw; do
    quiet ceph-authtool "$DIR/keyring" --gen-key -n "$entity" --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *'
done
quiet monmaptool --create --addv a "[v2:127.0.0.1:$MONPORT]" --fsid "$FSID" "$DIR/monmap"
quiet ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/keyring"
daemon ceph-mon -c "$CONF" -i a
mkdir -p "$DIR/mgr/ceph-x"
daemon ceph-mgr -c "$CONF" -i x
UUID=$(python3 -c 'import uuid; print(uuid.uuid4())')
OSDKEY=$(ceph-authtool --gen-print-key)
ID=$(echo "{\"cephx_secret\": \"$OSDKEY\"}" | timeout 60 ceph -c "$CONF" osd new "$UUID" -i - 2>>"$DIR/log/setup.out") \
    || emit_error "the Ceph monitor did not answer; see $DIR/log" false
mkdir -p "$DIR/osd/ceph-$ID"
quiet ceph-authtool "$DIR/keyring" --add-key "$OSDKEY" -n "osd.$ID"
quiet ceph-osd -c "$CONF" -i "$ID" --mkfs --osd-uuid "$UUID"
daemon ceph-osd -c "$CONF" -i "$ID"
daemon radosgw -c "$CONF" -n client.rgw
up=false
for _ in $(seq 1 240); do
    if curl -s -o /dev/null "http://127.0.0.1:$RGWPORT/"; then up=true; break; fi
    sleep 0.5
done
$up || emit_error "the RADOS Gateway did not answer within 120 s; see $DIR/log" false
ACCESS=buckia$(python3 -c 'import secrets; print(secrets.token_hex(6))')
SECRET=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
quiet timeout 60 radosgw-admin -c "$CONF" -n client.admin user create --uid buckia --display-name Buckia --access-key "$ACCESS" --secret "$SECRET"
if [ "$ACTION" = start ]; then
    echo "PORT=$RGWPORT ACCESS_KEY=$ACCESS SECRET_KEY=$SECRET"
    exit 0
fi
printf '{"endpoint": "http://127.0.0.1:%s", "accessKeyId": "%s", "secretAccessKey": "%s", "region": "us-east-1"}\n' \
    "$RGWPORT" "$ACCESS" "$SECRET"
# Until stdin closes, or an hour, whichever comes first.
timeout 3600 cat >/dev/null || true
