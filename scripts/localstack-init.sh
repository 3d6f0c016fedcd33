#!/bin/sh
# LocalStack ready hook (docker-compose): the queues and bucket of the local stack.
awslocal sqs create-queue --queue-name page-import
awslocal sqs create-queue --queue-name code2des
awslocal s3 mb s3://page-import-artifacts
touch /tmp/page-import-ready
