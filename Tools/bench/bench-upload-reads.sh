#!/usr/bin/env bash
# Bytes read from disk per byte uploaded to S3, with and without a known MD5, on a moto server
# this script starts on 127.0.0.1 and stops. Installs moto from PyPI if it is missing.
#
#   Tools/bench/bench-upload-reads.sh [SIZES_MIB]        (default 32,96: one single PUT, one multipart)
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=${1:-32,96}
command -v swift >/dev/null 2>&1 || export PATH="$PATH:/opt/swift/usr/bin"
swift build -c release --product buckia-bench >/dev/null
. Tools/bench/moto.sh
.build/release/buckia-bench upload-reads --endpoint "http://127.0.0.1:$port" --bucket bench --sizes-mib "$sizes"
