"""A moto server on 127.0.0.1 (free port) for the session store's concurrency tests.

It is tests.support.aws.AtomicMotoServer: see there why each request runs atomically.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.aws import moto_server


@pytest.fixture
def moto_url(aws_env: None) -> Iterator[str]:
    with moto_server() as url:
        yield url
