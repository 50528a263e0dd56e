"""`python -m local.ops verify` against a platform whose ingest is stopped
(LOCAL_DISABLED_MAPPINGS=ingest: its Kinesis mapping is not polled, as a disabled mapping on AWS):
the endpoint answers every check, so only the pipeline's check can tell, and it does. The passing
run is in test_local_trace_e2e.py, on a platform whose pipeline is whole."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support.local_platform import LocalPlatform, local_platform

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_verify")]
INGEST_WITHIN_S = 8  # the whole platform takes about a second to ingest an event here


@pytest.fixture(scope="module")
def without_ingest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    with local_platform(tmp_path_factory.mktemp("no-ingest"), {"LOCAL_DISABLED_MAPPINGS": "ingest"}) as running:
        yield running


def test_verify_fails_a_platform_whose_ingest_is_stopped(without_ingest: LocalPlatform) -> None:
    """Given a platform serving requests with its ingest mapping stopped, when verify runs, then it
    exits 1 and the one failing check is ingest, whose line names the calls not ingested within the
    bound; every endpoint check still passes, so the failure is the pipeline's and nothing else's."""
    report_path = without_ingest.log_dir / "verify.json"
    shown = without_ingest.local_ops(
        "verify", "--url", without_ingest.mcp_url, "--key", without_ingest.api_key,
        "--ingest-within", str(INGEST_WITHIN_S), "--report", str(report_path),
    )  # fmt: skip
    assert shown.returncode == 1, shown.stdout + shown.stderr[-3000:]
    report = json.loads(report_path.read_text())
    failed = [check for check in report["checks"] if check["status"] == "fail"]
    assert [check["name"] for check in failed] == ["ingest"], shown.stdout
    assert failed[0]["detail"].startswith(f"2 of 2 call event(s) not ingested within {INGEST_WITHIN_S} s")
    passed = {check["name"] for check in report["checks"] if check["status"] == "pass"}
    assert passed == {"health", "unauthenticated", "2025", "2026", "streaming", "dlq"}
    assert "NOT verified: a check failed" in shown.stdout
    # The platform says so at start too: the mapping is listed as disabled, not polled.
    assert "not polled (LOCAL_DISABLED_MAPPINGS)" in without_ingest.log_path.read_text()
