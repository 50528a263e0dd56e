from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.audit.stream_support import MotoSessionTable, aws_test_env, moto_tables


@pytest.fixture
def tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoSessionTable]:
    aws_test_env(monkeypatch)
    with moto_tables() as created:
        yield created
