"""A moto server on 127.0.0.1 (free port) for the session store's concurrency tests.

It is tests.support.aws.AtomicMotoServer: see there why each request runs atomically.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.aws import moto_server


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials, only inside tests; never probe the instance-metadata address."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def moto_url(aws_env: None) -> Iterator[str]:
    with moto_server() as url:
        yield url
