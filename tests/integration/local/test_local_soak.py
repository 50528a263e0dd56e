"""Soak: `python -m local` under a long run of small tool calls stays usable.

`append_note` calls through the official SDK client, a new session (`open_session`) every ten
calls, against a fresh platform subprocess (local/soak.py). LOCAL_SOAK_CALLS sets how many: 600
by default (about 1.5 minutes of calls on two cores, 3 minutes in all; 1,000 took more than 3
minutes on a busy machine). The full run is
``LOCAL_SOAK_CALLS=3000 .venv/bin/python -m pytest -q tests/integration/local/test_local_soak.py``
or ``.venv/bin/python -m local.soak --calls 3000 [--attach]``.

Consumed stream records are trimmed at once here (LOCAL_STREAM_RETENTION_SECONDS=0), so the
trimming runs under the pipeline too. The latency check is a ratio within one run: the p50 of
the last 250 calls against the first 250 (a quarter of the calls each, below 1,000 calls), so a
slower or busier machine does not fail it; a per-call cost that grows with the data does.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from local.soak import WINDOW, soak

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_platform")]
CALLS = int(os.environ.get("LOCAL_SOAK_CALLS", "600"))
MAX_RSS_MB = 1500
MAX_SLOWDOWN = 2.0
AUDIT_WITHIN_S = 120
STOP_WITHIN_S = 5


def test_many_small_calls_keep_memory_latency_and_the_audit_pipeline_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_HEALTH_SECONDS", "30")
    monkeypatch.setenv("LOCAL_STREAM_RETENTION_SECONDS", "0")  # trim what the pollers handled, at once
    result = soak(CALLS, log_dir=tmp_path, max_rss_mb=MAX_RSS_MB)
    print(result.summary())
    assert result.peak_rss_mb["platform"] < MAX_RSS_MB
    window = slice(None, min(WINDOW, CALLS // 4)), slice(-min(WINDOW, CALLS // 4), None)
    first, last = result.p50_ms(window[0]), result.p50_ms(window[1])
    assert last <= MAX_SLOWDOWN * first, f"p50 {first:.1f} ms at the start, {last:.1f} ms at the end"
    assert result.missing_audit == 0, f"{result.missing_audit} call(s) never audited"
    assert result.audit_lag_s is not None and result.audit_lag_s <= AUDIT_WITHIN_S
    assert result.stop_s < STOP_WITHIN_S, f"SIGTERM under load took {result.stop_s:.1f} s"
    # The health line the platform logged on SIGUSR1 once every call was audited.
    served, lags = _parse_health(result.final_health)
    assert served >= CALLS
    assert lags and all(n == 0 for n in lags.values()), result.final_health
    assert re.search(r"RSS \d+ MB", result.final_health)
    # Every call writes at least three streamed items (record, marker, metadata): untrimmed, the
    # table streams would hold 3 x CALLS records by now.
    held = re.search(r"stream records held (\d+)", result.final_health)
    assert held and int(held.group(1)) < 2 * CALLS, result.final_health
    assert "health: " in result.log.read_text().split(result.final_health)[0]  # periodic lines too


def _parse_health(line: str) -> tuple[int, dict[str, int]]:
    served = re.search(r"health: (\d+) MCP requests served", line)
    lag = re.search(r"pipeline lag \(records not yet handled\): ([^;]+);", line)
    assert served and lag, line
    return int(served.group(1)), {name: int(n) for name, n in re.findall(r"(\S+) (\d+)", lag.group(1))}
