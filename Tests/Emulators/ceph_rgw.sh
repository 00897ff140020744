#!/usr/bin/env bash
# A real S3 server for tests: a one-OSD Ceph cluster (memstore: data in RAM) and a RADOS
# Gateway on 127.0.0.1, everything under DIR, from Debian's packages
# (apt-get install ceph-mon ceph-mgr ceph-osd radosgw ceph-common).
#
#   Tests/Emulators/ceph_rgw.sh start DIR   # prints PORT=… ACCESS_KEY=… SECRET_KEY=…
#   Tests/Emulators/ceph_rgw.sh stop DIR    # stops every daemon it started (pid files in DIR/run)
#
# Unlike moto, RGW checks SigV4 signatures on every request and Content-MD5, and it compares
# If-Match with the stored ETag without quotes (Ceph 16). Seen here: healthy and answering in
# under 15 s, cephx on (RGW refused to run with auth none). Not yet run by the test suite.
set -euo pipefail
ACTION=${1:?start or stop}
DIR=${2:?a folder for the cluster}
if [ "$ACTION" = stop ]; then
    for pidfile in "$DIR"/run/*.pid; do
        [ -e "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
    exit 0
fi
mkdir -p "$DIR"/{mon,osd,mgr,run,log}
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
memstore device bytes = 3221225472
osd crush chooseleaf type = 0
run dir = $DIR/run
log file = $DIR/log/\$name.log
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
mon data = $DIR/mon/\$cluster-\$id
osd data = $DIR/osd/\$cluster-\$id
mgr data = $DIR/mgr/\$cluster-\$id
rgw frontends = beast endpoint=127.0.0.1:$RGWPORT
rgw dns name = 127.0.0.1
debug rgw = 1
CONF
ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
for entity in client.admin mgr.x client.rgw; do
    ceph-authtool "$DIR/keyring" --gen-key -n "$entity" --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
done
monmaptool --create --addv a "[v2:127.0.0.1:$MONPORT]" --fsid "$FSID" "$DIR/monmap" >/dev/null
ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/keyring"
ceph-mon -c "$CONF" -i a
mkdir -p "$DIR/mgr/ceph-x"
ceph-mgr -c "$CONF" -i x
UUID=$(python3 -c 'import uuid; print(uuid.uuid4())')
OSDKEY=$(ceph-authtool --gen-print-key)
ID=$(echo "{\"cephx_secret\": \"$OSDKEY\"}" | ceph -c "$CONF" osd new "$UUID" -i -)
mkdir -p "$DIR/osd/ceph-$ID"
ceph-authtool "$DIR/keyring" --add-key "$OSDKEY" -n "osd.$ID" >/dev/null
ceph-osd -c "$CONF" -i "$ID" --mkfs --osd-uuid "$UUID" 2>/dev/null
ceph-osd -c "$CONF" -i "$ID"
radosgw -c "$CONF" -n client.rgw
for _ in $(seq 1 120); do
    curl -s -o /dev/null "http://127.0.0.1:$RGWPORT/" && break
    sleep 0.5
done
ACCESS=buckia$(python3 -c 'import secrets; print(secrets.token_hex(6))')
SECRET=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
radosgw-admin -c "$CONF" -n client.admin user create --uid buckia --display-name Buckia --access-key "$ACCESS" --secret "$SECRET" >/dev/null
echo "PORT=$RGWPORT ACCESS_KEY=$ACCESS SECRET_KEY=$SECRET"
