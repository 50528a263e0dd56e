"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest
from hypothesis import settings

from tests.support.aws import set_fake_aws_env

# Property tests assert properties, not durations: an example's run time on a shared CI runner
# says nothing about the code (performance is measured by `make bench`).
settings.register_profile("platform", deadline=None)
settings.load_profile("platform")


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake AWS credentials, only inside the test that asks for them."""
    set_fake_aws_env(monkeypatch)
