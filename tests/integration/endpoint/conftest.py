"""Fixtures: one moto server and one endpoint instance per test module, API keys."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from tests.support.aws import fake_credentials
from tests.support.endpoint import AwsStack, Instance, aws_stack, endpoint_instance


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsStack]:
    with fake_credentials(), aws_stack() as stack:
        yield stack


@pytest.fixture(scope="module")
def instance(aws: AwsStack) -> Iterator[Instance]:
    with endpoint_instance(aws) as running:
        yield running
    # Every message the server sent in the module, checked against the official models (each
    # invalid one raises). No minimum count: under xdist a module's tests may be spread over
    # workers, and a worker that ran only /healthz or header checks saw no MCP message.
    running.recorder.validate_all()


@pytest.fixture(scope="module")
def mint_key(aws: AwsStack) -> Callable[[str], str]:
    store = ApiKeyStore(aws.table, aws.client("dynamodb"))
    return lambda principal: store.mint(principal)


@pytest.fixture(scope="module")
def api_key(mint_key: Callable[[str], str]) -> str:
    return mint_key("alice")
