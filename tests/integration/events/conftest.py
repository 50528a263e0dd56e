"""moto (in-process) fixtures for the event pipeline: fake credentials only here."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

REGION = "us-east-1"


@pytest.fixture
def aws(aws_env):
    with mock_aws():
        yield


@pytest.fixture
def kinesis(aws):
    return boto3.client("kinesis", region_name=REGION)


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs", region_name=REGION)


@pytest.fixture
def dynamodb(aws):
    return boto3.client("dynamodb", region_name=REGION)
