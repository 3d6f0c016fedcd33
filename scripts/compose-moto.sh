#!/bin/sh
# The compose stack's AWS emulator (docker-compose.yml, service `moto`):
# moto on port 4566 with the stack's queues and bucket; /tmp/page-import-ready
# tells the healthcheck they exist. PID 1 of its container.
set -eu
moto_server -H 0.0.0.0 -p 4566 &
pid=$!
# PID 1 gets no default signal handling: pass the stop on to moto.
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; exit 0' TERM INT
python3 - <<'PY'
import time, urllib.request
import boto3
for _ in range(100):
    try:
        urllib.request.urlopen("http://127.0.0.1:4566/moto-api/", timeout=1)
        break
    except OSError:
        time.sleep(0.1)
kw = dict(endpoint_url="http://127.0.0.1:4566", region_name="us-east-1",
          aws_access_key_id="test", aws_secret_access_key="test")
sqs = boto3.client("sqs", **kw)
for name in ("page-import", "code2des"):
    sqs.create_queue(QueueName=name)
boto3.client("s3", **kw).create_bucket(Bucket="page-import-artifacts")
PY
touch /tmp/page-import-ready
wait "$pid"
