"""The verdict on the suite's authorization-server scenarios: every check of both must succeed."""

from __future__ import annotations

import json
from pathlib import Path

from local.conformance.authorization import SCENARIOS, AuthorizationRun, load_results

SUCCESS = {"id": "x", "status": "SUCCESS"}


def run(results: dict[str, list[dict[str, str]]], returncode: int = 0, browser_error: str = "") -> AuthorizationRun:
    return AuthorizationRun(returncode, results, Path("suite.log"), browser_error)  # type: ignore[arg-type]


def test_both_scenarios_succeeding_is_a_pass() -> None:
    assert run({key: [SUCCESS] for key in SCENARIOS}).problems() == []


def test_a_failed_or_warned_check_a_missing_scenario_a_crash_or_a_browser_error_fails_the_run() -> None:
    warned = {**{key: [SUCCESS] for key in SCENARIOS}, SCENARIOS[0]: [SUCCESS, {"id": "cimd", "status": "WARNING"}]}
    assert ["WARNING cimd" in problem for problem in run(warned).problems()] == [True]
    missing = {SCENARIOS[0]: [SUCCESS]}
    assert run(missing).problems() == [f"authorization: {SCENARIOS[1]} produced no result"]
    failed = {
        key: [{"id": "authorization-code-grant", "status": "FAILURE", "errorMessage": "iss"}] for key in SCENARIOS
    }
    assert len(run(failed, returncode=1).problems()) == 3
    assert "browser" in run({key: [SUCCESS] for key in SCENARIOS}, browser_error="Timeout").problems()[0]


def test_results_are_read_per_scenario_the_last_run_winning(tmp_path: Path) -> None:
    for stamp, status in (("2026-12-02T01-58-34-358Z", "FAILURE"), ("2026-12-02T01-58-36-527Z", "SUCCESS")):
        folder = tmp_path / f"authorization-server-authorization-server-metadata-endpoint-{stamp}"
        folder.mkdir()
        (folder / "checks.json").write_text(json.dumps([{"id": "m", "status": status}]))
    assert load_results(tmp_path) == {"authorization-server-metadata-endpoint": [{"id": "m", "status": "SUCCESS"}]}
