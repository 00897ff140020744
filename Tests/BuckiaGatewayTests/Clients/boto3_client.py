"""boto3 through `buckia serve s3`: copy, list, sync-style replace, download and delete
under one prefix, with whatever credentials the environment holds (temporary ones in the
tests). Prints one JSON object; any failure is an exception and a non-zero exit."""
import hashlib, io, json, os, sys
import boto3
import botocore.httpchecksum
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

endpoint, bucket, prefix, work = sys.argv[1:5]
if "--trailer" in sys.argv:
    # botocore sends its checksum in an aws-chunked trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER,
    # the body HTTP-chunked as well) only over TLS; the gateway serves plain HTTP on loopback, so
    # the scheme check is told it is TLS and everything else is botocore's own encoding.
    real_urlparse = botocore.httpchecksum.urlparse
    botocore.httpchecksum.urlparse = lambda url: real_urlparse(url)._replace(scheme="https")
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
small = {f"{prefix}small-{i}.txt": f"small file {i}\n".encode() * (i + 1) for i in range(3)}
for key, body in small.items():
    s3.put_object(Bucket=bucket, Key=key, Body=body)
big = os.urandom(12 * 1024 * 1024 + 12345)
config = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024)
s3.upload_fileobj(io.BytesIO(big), bucket, prefix + "big.bin", Config=config)

listed = []
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": 2}):
    listed += [(o["Key"], o["Size"]) for o in page.get("Contents", [])]

out = io.BytesIO()
s3.download_fileobj(bucket, prefix + "big.bin", out, Config=config)
big_ok = hashlib.sha256(out.getvalue()).hexdigest() == hashlib.sha256(big).hexdigest()
ranged = s3.get_object(Bucket=bucket, Key=prefix + "big.bin", Range="bytes=100-199")["Body"].read() == big[100:200]

s3.copy_object(Bucket=bucket, Key=prefix + "copy.txt", CopySource={"Bucket": bucket, "Key": prefix + "small-0.txt"})
copied = s3.get_object(Bucket=bucket, Key=prefix + "copy.txt")["Body"].read() == small[prefix + "small-0.txt"]
# A replace, as a sync makes it: the new bytes and only them.
s3.put_object(Bucket=bucket, Key=prefix + "small-1.txt", Body=b"replaced\n")
replaced = s3.get_object(Bucket=bucket, Key=prefix + "small-1.txt")["Body"].read() == b"replaced\n"

s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": prefix + "small-0.txt"}, {"Key": prefix + "big.bin"}]})
s3.delete_object(Bucket=bucket, Key=prefix + "copy.txt")
after = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []))
print(json.dumps({"listed": sorted(listed), "big_ok": big_ok, "ranged": ranged, "copied": copied, "replaced": replaced, "after": after}))
