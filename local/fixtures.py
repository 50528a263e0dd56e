"""Fixture packs: feature packages a local endpoint can load next to its own tools.

``python -m local --fixtures conformance`` serves the tools the MCP conformance suite calls
(``examples/conformance``); the deployed endpoint never loads a fixture pack.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType

FIXTURE_PACKS = {"conformance": "examples.conformance"}


def fixture_packages(names: Iterable[str]) -> tuple[ModuleType, ...]:
    """The feature packages of the named packs, in the given order, each once."""
    unknown = sorted(set(names) - set(FIXTURE_PACKS))
    if unknown:
        raise SystemExit(f"unknown fixture pack(s) {', '.join(unknown)}; available: {', '.join(FIXTURE_PACKS)}")
    return tuple(importlib.import_module(FIXTURE_PACKS[name]) for name in dict.fromkeys(names))
