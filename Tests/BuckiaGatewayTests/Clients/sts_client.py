"""boto3 gets S3 credentials from `buckia serve s3` as it gets them from AWS STS, and uses them.

    sts_client.py ENDPOINT SUBJECT ROLE_ARN explicit|environment

`explicit` calls sts.assume_role_with_web_identity with the token in $ID_TOKEN_FILE. `environment`
uses nothing but AWS's own conventions: AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN and
AWS_ROLE_SESSION_NAME name the login, AWS_ENDPOINT_URL_STS and AWS_ENDPOINT_URL_S3 the gateway,
and boto3's web-identity credential provider does the rest. Either way the credentials then
write, read and list the user's own folder, and are refused another user's. Prints one JSON object."""
import json, os, sys
import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, subject, role_arn, mode = sys.argv[1:5]
s3_config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
report = {}
if mode == "explicit":
    sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1", config=Config(signature_version=botocore.UNSIGNED))
    with open(os.environ["ID_TOKEN_FILE"]) as f:
        token = f.read().strip()
    answer = sts.assume_role_with_web_identity(RoleArn=role_arn, RoleSessionName="buckia-app", WebIdentityToken=token, DurationSeconds=900)
    credentials = answer["Credentials"]
    report.update(subject=answer["SubjectFromWebIdentityToken"], provider=answer["Provider"], audience=answer["Audience"],
                  arn=answer["AssumedRoleUser"]["Arn"], expiration=credentials["Expiration"].isoformat(),
                  access_key_id=credentials["AccessKeyId"])
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=s3_config,
                      aws_access_key_id=credentials["AccessKeyId"], aws_secret_access_key=credentials["SecretAccessKey"],
                      aws_session_token=credentials["SessionToken"])
else:
    session = boto3.Session(region_name="us-east-1")
    frozen = session.get_credentials().get_frozen_credentials()
    report.update(method=session.get_credentials().method, access_key_id=frozen.access_key)
    s3 = session.client("s3", config=s3_config)

key = subject + "/notes-" + mode + ".txt"
s3.put_object(Bucket="home", Key=key, Body=b"mine\n")
report["read"] = s3.get_object(Bucket="home", Key=key)["Body"].read().decode()
report["listed"] = [o["Key"] for o in s3.list_objects_v2(Bucket="home", Prefix=subject + "/").get("Contents", [])]
# The whole bucket lists as what the grants cover: the user's own folder only.
report["bucket_list"] = [o["Key"] for o in s3.list_objects_v2(Bucket="home").get("Contents", [])]
for name, call in [("other_put", lambda: s3.put_object(Bucket="home", Key="u2/notes.txt", Body=b"x")),
                   ("other_get", lambda: s3.get_object(Bucket="home", Key="u2/secret.txt")),
                   ("other_list", lambda: s3.list_objects_v2(Bucket="home", Prefix="u2/"))]:
    try:
        call()
        report[name] = "allowed"
    except ClientError as error:
        report[name] = error.response["Error"]["Code"]
print(json.dumps(report))
