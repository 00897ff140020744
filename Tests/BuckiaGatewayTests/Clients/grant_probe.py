"""Probes what one temporary credential may do through `buckia serve s3`: every operation on
every key of a corpus, listings, copies across the grant's edge, multipart parts and batch
deletes. Prints {"keys": {key: {operation: [status, code]}}, ...} as JSON; the test decides."""
import json, sys
import boto3, botocore
from botocore.config import Config

endpoint, bucket, cases_file = sys.argv[1:4]
with open(cases_file, encoding="utf-8") as f:
    keys = json.load(f)
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

def probe(call):
    try:
        response = call()
        return [response["ResponseMetadata"]["HTTPStatusCode"], None, response]
    except botocore.exceptions.ClientError as error:
        return [error.response["ResponseMetadata"]["HTTPStatusCode"], error.response.get("Error", {}).get("Code"), None]

results = {}
for index, key in enumerate(keys):
    row = {}
    row["get"] = probe(lambda: s3.get_object(Bucket=bucket, Key=key))[:2]
    row["head"] = probe(lambda: s3.head_object(Bucket=bucket, Key=key))[:2]
    row["put"] = probe(lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"probe"))[:2]
    row["delete"] = probe(lambda: s3.delete_object(Bucket=bucket, Key=key))[:2]
    row["copy_from"] = probe(lambda: s3.copy_object(Bucket=bucket, Key=f"alice/inbound/copied-{index}", CopySource={"Bucket": bucket, "Key": key}))[:2]
    row["copy_to"] = probe(lambda: s3.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": "alice/doc.txt"}))[:2]
    status, code, started = probe(lambda: s3.create_multipart_upload(Bucket=bucket, Key=key))
    row["multipart"] = [status, code]
    if started:
        s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=started["UploadId"])
    results[key] = row

def listed(**arguments):
    status, code, response = probe(lambda: s3.list_objects_v2(Bucket=bucket, **arguments))
    if not response:
        return [status, code]
    return [status, sorted([o["Key"] for o in response.get("Contents", [])] + [p["Prefix"] for p in response.get("CommonPrefixes", [])])]

lists = {
    "all": listed(),
    "prefix alice": listed(Prefix="alice"),
    "prefix alice/": listed(Prefix="alice/"),
    "prefix ali": listed(Prefix="ali"),
    "delimiter": listed(Delimiter="/"),
    "prefix alice2/": listed(Prefix="alice2/"),
    "prefix bob/": listed(Prefix="bob/"),
    "prefix alice/../bob/": listed(Prefix="alice/../bob/"),
    "start-after": listed(StartAfter="alice/doc.txt", Prefix="alice/"),
}
buckets = sorted(b["Name"] for b in s3.list_buckets()["Buckets"])

# Multipart: parts go only to the upload's own key, which the grant must cover.
upload = s3.create_multipart_upload(Bucket=bucket, Key="alice/inbound/mp.bin")["UploadId"]
part = s3.upload_part(Bucket=bucket, Key="alice/inbound/mp.bin", UploadId=upload, PartNumber=1, Body=b"p" * 1024)
multipart = {
    "part elsewhere": probe(lambda: s3.upload_part(Bucket=bucket, Key="bob/mp.bin", UploadId=upload, PartNumber=2, Body=b"x"))[:2],
    "complete elsewhere": probe(lambda: s3.complete_multipart_upload(Bucket=bucket, Key="bob/mp.bin", UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}))[:2],
    "complete": probe(lambda: s3.complete_multipart_upload(Bucket=bucket, Key="alice/inbound/mp.bin", UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}))[:2],
}
batch = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "alice/inbound/existing.txt"}, {"Key": "bob/secret.txt"}]})
deleted = {"deleted": sorted(d["Key"] for d in batch.get("Deleted", [])), "errors": sorted([e["Key"], e["Code"]] for e in batch.get("Errors", []))}
print(json.dumps({"keys": results, "lists": lists, "buckets": buckets, "multipart": multipart, "batch": deleted}))
