"""boto3 through `buckia serve s3`: a multipart upload with CRC32 checksums (COMPOSITE), read
back by part number, with checksum mode and GetObjectAttributes, and a PUT with a SHA-256
checksum; every expected value computed here with Python's own zlib and hashlib. Prints one
JSON object; any failure is an exception and a non-zero exit."""
import base64, hashlib, json, os, struct, sys, zlib
import boto3
from botocore.config import Config

endpoint, bucket, prefix = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
key = prefix + "parts.bin"
parts = [os.urandom(5 * 1024 * 1024), os.urandom(1234)]
upload = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32")
listed = []
for number, data in enumerate(parts, start=1):
    answer = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload["UploadId"], PartNumber=number, Body=data, ChecksumAlgorithm="CRC32")
    listed.append({"PartNumber": number, "ETag": answer["ETag"], "ChecksumCRC32": answer["ChecksumCRC32"]})
s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload["UploadId"], MultipartUpload={"Parts": listed})


def crc32(data):
    return struct.pack(">I", zlib.crc32(data))


composite = base64.b64encode(crc32(b"".join(crc32(p) for p in parts))).decode() + "-2"
head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
second = s3.get_object(Bucket=bucket, Key=key, PartNumber=2)
attributes = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize"])

s3.put_object(Bucket=bucket, Key=prefix + "one.txt", Body=b"one body\n", ChecksumAlgorithm="SHA256")
one = s3.head_object(Bucket=bucket, Key=prefix + "one.txt", ChecksumMode="ENABLED")
print(json.dumps({
    "composite": head.get("ChecksumCRC32") == composite and head.get("ChecksumType") == "COMPOSITE",
    "part": second["Body"].read() == parts[1] and second["PartsCount"] == 2 and second["ContentLength"] == 1234,
    "attributes": attributes["ObjectSize"] == len(parts[0]) + 1234 and attributes["ObjectParts"]["TotalPartsCount"] == 2
    and attributes["Checksum"]["ChecksumCRC32"] == composite and attributes["ETag"] == head["ETag"].strip('"'),
    "sha256": one.get("ChecksumSHA256") == base64.b64encode(hashlib.sha256(b"one body\n").digest()).decode(),
    "seen": {"head": head.get("ChecksumCRC32"), "expected": composite, "attributes": {k: v for k, v in attributes.items() if k != "ResponseMetadata"}},
}, default=str))
