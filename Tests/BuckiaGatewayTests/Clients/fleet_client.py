"""boto3 and the AWS CLI through a load balancer in front of three `buckia serve s3` processes:
a multipart upload whose parts (CRC32 checksums, 4 at once) land on every gateway, one gateway
killed half way, the upload completed through the others; then the AWS CLI's own multipart
upload of the same file, a copy, a create-only PUT raced through two gateways, and the
listing as each gateway gives it. Expected values are computed here (hashlib, zlib). Prints
one JSON object; a failure is an exception and a non-zero exit. With FLEET_MULTIPART_ETAG=0
(a backend whose entity tags are its own, a local folder's) the object's ETag is not expected
to be S3's multipart form.

Usage: fleet_client.py BALANCER BUCKET MIB PID_TO_KILL WORK GATEWAY...
"""
import base64, concurrent.futures, hashlib, json, os, signal, struct, subprocess, sys, threading, time, zlib
import boto3
from botocore.config import Config

balancer, bucket, mib, victim, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
gateways = sys.argv[6:]
PART = 8 << 20


def client(endpoint, attempts=8):
    # Standard retries: a part cut off by the killed gateway is sent again, as any SDK does.
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"mode": "standard", "max_attempts": attempts},
                                      max_pool_connections=8))


s3 = client(balancer)
path = os.path.join(work, "big.bin")
whole = hashlib.md5()
with open(path, "wb") as out:
    for _ in range(mib):
        chunk = os.urandom(1 << 20)
        whole.update(chunk)
        out.write(chunk)
size = mib << 20
count = (size + PART - 1) // PART


def read_part(number):
    with open(path, "rb") as source:
        source.seek((number - 1) * PART)
        return source.read(PART)


def crc32(data):
    return struct.pack(">I", zlib.crc32(data))


key = "fleet/boto3.bin"
started = time.monotonic()
seconds = {}
upload = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32")["UploadId"]
done = []
killed = threading.Event()
lock = threading.Lock()


def send(number):
    data = read_part(number)
    answer = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=number, Body=data, ChecksumAlgorithm="CRC32")
    assert answer["ChecksumCRC32"] == base64.b64encode(crc32(data)).decode(), f"part {number}'s checksum"
    with lock:
        done.append(number)
        # Half way, one gateway dies without a word: the parts it held are in the backend.
        if len(done) >= count // 2 and not killed.is_set():
            killed.set()
            os.kill(victim, signal.SIGKILL)
    return {"PartNumber": number, "ETag": answer["ETag"], "ChecksumCRC32": answer["ChecksumCRC32"]}


with concurrent.futures.ThreadPoolExecutor(4) as pool:
    parts = sorted(pool.map(send, range(1, count + 1)), key=lambda p: p["PartNumber"])
seconds["parts"] = round(time.monotonic() - started, 2)
listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=upload)["Parts"]
listed_ok = [(p["PartNumber"], p["ETag"], p.get("ChecksumCRC32")) for p in listed] == [(p["PartNumber"], p["ETag"], p["ChecksumCRC32"]) for p in parts][:1000]
completed = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts})
composite = base64.b64encode(crc32(b"".join(base64.b64decode(p["ChecksumCRC32"]) for p in parts))).decode() + f"-{count}"


def md5_of(endpoint, name):
    body = client(endpoint).get_object(Bucket=bucket, Key=name)["Body"]
    digest = hashlib.md5()
    for chunk in iter(lambda: body.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
multipart_etag = os.environ.get("FLEET_MULTIPART_ETAG", "1") != "0"
boto3_ok = md5_of(balancer, key) == whole.hexdigest() and head["ContentLength"] == size and (
    head["ETag"].endswith(f'-{count}"') or not multipart_etag)

seconds["boto3"] = round(time.monotonic() - started, 2)
# The AWS CLI's own multipart upload (8 MiB parts, 10 at once) of the same file.
env = dict(os.environ)
cli = subprocess.run(["aws", "--endpoint-url", balancer, "s3", "cp", path, f"s3://{bucket}/fleet/cli.bin", "--only-show-errors"],
                     env=env, capture_output=True, text=True, timeout=600)
assert cli.returncode == 0, cli.stderr[-2000:]
cli_ok = md5_of(balancer, "fleet/cli.bin") == whole.hexdigest()
seconds["cli"] = round(time.monotonic() - started, 2)

# A copy through the balancer; each gateway then sees it, and the listing, alike.
s3.copy_object(Bucket=bucket, Key="fleet/copy.bin", CopySource={"Bucket": bucket, "Key": key})
alive = [g for g in gateways]
heads = []
listings = []
for endpoint in alive:
    try:
        other = client(endpoint, attempts=1)  # one gateway is gone: asking it once says so
        other_head = other.head_object(Bucket=bucket, Key="fleet/copy.bin")
        heads.append(other_head["ContentLength"])
        listings.append(sorted(o["Key"] for o in other.list_objects_v2(Bucket=bucket, Prefix="fleet/")["Contents"]))
    except Exception as error:  # the killed one
        heads.append(str(type(error).__name__))
        listings.append(None)

# A create-only PUT through two gateways: the second is refused, whichever answers.
live = [g for g, h in zip(alive, heads) if h == size]
first = client(live[0]).put_object(Bucket=bucket, Key="fleet/once.txt", Body=b"first", IfNoneMatch="*")
try:
    client(live[-1]).put_object(Bucket=bucket, Key="fleet/once.txt", Body=b"second", IfNoneMatch="*")
    second = 200
except s3.exceptions.ClientError as error:
    second = error.response["ResponseMetadata"]["HTTPStatusCode"]
once = client(live[-1]).get_object(Bucket=bucket, Key="fleet/once.txt")["Body"].read()

print(json.dumps({
    "parts": count, "listed": listed_ok, "boto3": boto3_ok, "checksum": head.get("ChecksumCRC32") == composite,
    "etag": completed["ETag"], "cli": cli_ok, "heads": heads, "listings": listings,
    "conditional": second == 412 and once == b"first", "killed": killed.is_set(),
    "seconds": dict(seconds, all=round(time.monotonic() - started, 2)),
}))
