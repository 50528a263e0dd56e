"""The deploying page's idle-cost and minimal-profile markers render as the docs build renders them
(scripts/docs_hooks.py): tables walked from the synthesized configurations, not hand-kept numbers."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operating" / "deploying.md"

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def test_the_deploying_page_renders_the_idle_table_and_the_one_shards_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    hooks = importlib.import_module("docs_hooks")
    page = PAGE.read_text()
    assert hooks.IDLE_COST_MARKER in page and hooks.MINIMAL_LIMITS_MARKER in page
    with hooks.project_imports():
        bench_aws_calls = importlib.import_module("bench_aws_calls")
    # The event size is the AWS-calls suite's measurement (a moto run): fixed here
    monkeypatch.setattr(bench_aws_calls, "event_size", lambda: (900, 1))
    rendered = hooks.on_page_markdown(page)
    assert hooks.IDLE_COST_MARKER not in rendered and hooks.MINIMAL_LIMITS_MARKER not in rendered
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in rendered.splitlines() if line.startswith("| ")}
    configurations = ("default (dax, ON_DEMAND stream, fan-out)", "dax=false", "profile=minimal")
    assert all(configuration in rows for configuration in configurations)
    total = {name: float(rows[name].rstrip(" |").rsplit(" | ", 1)[1]) for name in configurations}
    assert total["profile=minimal"] < total["dax=false"] < total["default (dax, ON_DEMAND stream, fan-out)"]
    assert "| writes: 1,000 records/s per shard | 1,000 |" in rendered
