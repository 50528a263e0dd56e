"""The services a unit test gives the use cases: an in-memory session store, plus what it names."""

from __future__ import annotations

from typing import Any

from mcp_platform.application.services import Services
from mcp_platform.testing import InMemorySessions


def make_services(**given: Any) -> Services:
    return Services(**{"store": InMemorySessions(), "deps": None, **given})
