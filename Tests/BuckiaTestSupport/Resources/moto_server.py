#!/usr/bin/env python3
"""A moto S3 server for Buckia's S3 tests, with SigV4 header signatures checked.

Usage: moto_server.py [--no-auth] [--lifetime SECONDS]

Listens on 127.0.0.1 on a port the kernel chooses, then prints one JSON line to stdout:

  {"endpoint": "http://127.0.0.1:PORT", "accessKeyId": "...", "secretAccessKey": "...",
   "region": "us-east-1"}

or, when it cannot start, {"error": "...", "missing": true|false} and exits non-zero.

Signature checking: moto checks signatures only once it has served
INITIAL_NO_AUTH_ACTION_COUNT requests, and it reads that setting when it is imported, so
the variable is set below before the first moto import. The free requests are spent on the
IAM calls that make credentials moto knows (SETUP_CALLS, one request each): after them,
every request must be signed with the printed key, and a wrong secret gets 403
SignatureDoesNotMatch. moto never checks presigned signatures, Content-MD5 or
x-amz-checksum-sha256; in this mode presigned URLs answer 500, so `--no-auth` starts a
server that checks nothing (and prints dummy credentials) for those tests.

The server stops when its stdin reaches EOF (the test process ended or closed it), on
SIGTERM or SIGINT, or after --lifetime seconds (default 3600) whatever happens.
"""
import json
import os
import signal
import sys
import threading

# The IAM requests the setup sends before signatures are checked; N is their number.
SETUP_CALLS = ("CreateUser", "PutUserPolicy", "CreateAccessKey")
REGION = "us-east-1"
ALLOW_ALL = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
)
INSTALL_HINT = "python3 -m pip install 'moto[server]'"


def emit(payload):
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def fail(message, missing=False):
    emit({"error": message, "missing": missing})
    os._exit(3 if missing else 2)


def stop(*_):
    # os._exit: moto's server thread may be mid-request; nothing here needs flushing.
    os._exit(0)


def main():
    args = sys.argv[1:]
    auth = "--no-auth" not in args
    lifetime = 3600.0
    if "--lifetime" in args:
        lifetime = float(args[args.index("--lifetime") + 1])

    # A child of an async Swift test inherits a blocked SIGTERM: unblock it so that
    # `terminate()` works too (the tests still use SIGKILL).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    watchdog = threading.Timer(lifetime, stop)
    watchdog.daemon = True
    watchdog.start()

    if auth:
        os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = str(len(SETUP_CALLS))
    else:
        os.environ.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)
    # Never let boto3 pick up a real profile or endpoint from the environment.
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_IAM"):
        os.environ.pop(name, None)

    try:
        import logging

        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError as error:
        fail(f"{sys.executable} cannot import moto or boto3 ({error}); run: {INSTALL_HINT}", missing=True)

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"

    if auth:
        iam = boto3.client(
            "iam", endpoint_url=endpoint, region_name=REGION,
            aws_access_key_id="setup", aws_secret_access_key="setup",
        )
        user = "buckia-tests"
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="allow-all", PolicyDocument=ALLOW_ALL)
        key = iam.create_access_key(UserName=user)["AccessKey"]
        credentials = {"accessKeyId": key["AccessKeyId"], "secretAccessKey": key["SecretAccessKey"]}
    else:
        credentials = {"accessKeyId": "buckia-no-auth", "secretAccessKey": "buckia-no-auth-secret"}

    emit({"endpoint": endpoint, **credentials, "region": REGION})

    while sys.stdin.buffer.read(65536):
        pass
    stop()


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as error:  # anything else: say what, rather than die silently
        fail(f"moto_server.py failed: {type(error).__name__}: {error}")
