"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest

from tests.support.aws import set_fake_aws_env


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake AWS credentials, only inside the test that asks for them."""
    set_fake_aws_env(monkeypatch)
