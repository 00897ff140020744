"""A browser's form upload through `buckia serve s3`: boto3 signs a POST policy
(generate_presigned_post, AWS's own signer) and the form goes up as multipart/form-data, the
way a browser sends it. Usage: presigned_post.py ENDPOINT BUCKET KEY SIZE MAXSIZE EXPIRES [tamper]
with credentials from the environment; POST_SIGNATURE_VERSION=s3v4 signs with SigV4 (boto3's
default for forms is still Signature Version 2). Prints {"status": ..., "body": ...}."""
import json, os, sys, urllib.error, urllib.request, uuid
import boto3
from botocore.config import Config

endpoint, bucket, key, size, maximum, expires = sys.argv[1:7]
tamper = sys.argv[7] if len(sys.argv) > 7 else ""
version = os.environ.get("POST_SIGNATURE_VERSION")
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, **({"signature_version": version} if version else {})))
prefix = key.rsplit("/", 1)[0] + "/"
post = s3.generate_presigned_post(
    bucket, key,
    Fields={"Content-Type": "text/plain", "success_action_status": "201", "x-amz-meta-colour": "blue"},
    Conditions=[["starts-with", "$key", prefix], ["content-length-range", 1, int(maximum)], {"Content-Type": "text/plain"},
                {"success_action_status": "201"}, {"x-amz-meta-colour": "blue"}],
    ExpiresIn=int(expires))
fields = dict(post["fields"])
if tamper == "key":
    fields["key"] = "elsewhere/" + key.rsplit("/", 1)[1]
elif tamper == "policy":
    fields["policy"] = fields["policy"][:-4] + ("AAAA" if not fields["policy"].endswith("AAAA") else "BBBB")
elif tamper == "extra":
    fields["x-amz-meta-unsigned"] = "sneaked in"
boundary = "----buckia" + uuid.uuid4().hex
parts = []
for name, value in fields.items():
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="note.txt"\r\nContent-Type: text/plain\r\n\r\n'.encode())
parts.append(b"x" * int(size))
parts.append(f"\r\n--{boundary}--\r\n".encode())
request = urllib.request.Request(endpoint + "/" + bucket, data=b"".join(parts), method="POST",
                                 headers={"Content-Type": "multipart/form-data; boundary=" + boundary})
try:
    with urllib.request.urlopen(request) as answer:
        print(json.dumps({"status": answer.status, "body": answer.read().decode()}))
except urllib.error.HTTPError as error:
    print(json.dumps({"status": error.code, "body": error.read().decode()}))
