"""The conformance verdict: expected failures with reasons, stale entries, false passes (pure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from local.conformance.baseline import FIXTURE_MISSING, NOTHING_CHECKED, Expected, judge, load_expected
from local.conformance.suite import Requirements, load_results

REQUIREMENTS = Requirements(
    "2026-07-28",
    ("tools-call-error", "server-stateless", "resources-read-text"),
    {"tasks-lifecycle": "extension", "tasks-status-notifications": "extension", "http-header-validation": "pending"},
)
SERVED = {
    "test_error_handling",
    "test_missing_capability",
    "test_logging_tool",
    "test_streaming_elicitation",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    *("greet", "slow_compute", "failing_job", "protocol_error_job"),
}


def check(check_id: str, status: str = "SUCCESS", message: str = "") -> dict[str, Any]:
    return {"id": check_id, "status": status, "errorMessage": message}


def results(**overrides: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    base = {
        "tools-call-error": [check("tools-call-error"), check("wire-schema-valid")],
        "server-stateless": [check("sep-2575-server-implements-discover"), check("sep-2575-http-server-method")],
        "resources-read-text": [check("resources-read-text")],
        "tasks-lifecycle": [check("tasks-sync-tool-call")],
        "tasks-status-notifications": [check("tasks-status-notifications", "SKIPPED", "harness awaits a rewrite")],
        "http-header-validation": [check("sep-2243-server-accepts-whitespace-header-value", "FAILURE")],
    }
    base.update({name.replace("_", "-"): checks for name, checks in overrides.items()})
    return base


def test_all_passing_is_ok_and_pending_failures_do_not_count() -> None:
    verdict = judge(REQUIREMENTS, results(), [], SERVED)
    assert verdict.ok
    assert [o.scenario for o in verdict.passed] == list(REQUIREMENTS.required)
    outcomes = {o.scenario: (reason, o.passed, o.skipped) for o, reason in verdict.not_scored}
    assert outcomes == {
        "tasks-lifecycle": ("extension", True, False),
        "tasks-status-notifications": ("extension", False, True),  # judged by nobody: no pass, no failure
        "http-header-validation": ("pending", False, False),
    }


def test_a_failing_extension_scenario_fails_the_run_although_the_suite_does_not_score_it() -> None:
    """Tasks are an extension this platform advertises: a failure there is a failure."""
    failing = results(tasks_lifecycle=[check("tasks-sync-tool-call", "FAILURE", "Unknown tool: greet")])
    verdict = judge(REQUIREMENTS, failing, [], SERVED)
    assert not verdict.ok
    assert [o.scenario for o in verdict.failed_extensions] == ["tasks-lifecycle"]


def test_a_failure_without_an_entry_fails_the_run() -> None:
    failing = results(resources_read_text=[check("resources-read-text", "FAILURE", "Unknown resource")])
    verdict = judge(REQUIREMENTS, failing, [], SERVED)
    assert not verdict.ok
    [(outcome, checks)] = verdict.unexpected
    assert outcome.scenario == "resources-read-text"
    assert [c["errorMessage"] for c in checks] == ["Unknown resource"]


def test_a_listed_failure_is_expected_and_a_listed_pass_is_stale() -> None:
    failing = results(resources_read_text=[check("resources-read-text", "FAILURE")])
    entry = Expected("resources-read-text", None, "not served yet")
    assert judge(REQUIREMENTS, failing, [entry], SERVED).ok
    stale = judge(REQUIREMENTS, results(), [entry], SERVED)
    assert not stale.ok
    assert stale.stale == [entry]


def test_a_per_check_entry_excuses_that_check_only() -> None:
    entry = Expected("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream", "interactive")
    one = results(server_stateless=[check("sep-2575-server-implements-discover"), check(entry.check or "", "FAILURE")])
    assert judge(REQUIREMENTS, one, [entry], SERVED).ok
    two = results(
        server_stateless=[check(entry.check or "", "FAILURE"), check("sep-2575-missing-capability-http-400", "FAILURE")]
    )
    verdict = judge(REQUIREMENTS, two, [entry], SERVED)
    [(_, uncovered)] = verdict.unexpected
    assert [c["id"] for c in uncovered] == ["sep-2575-missing-capability-http-400"]
    fixed = judge(REQUIREMENTS, results(), [entry], SERVED)
    assert fixed.stale == [entry]


def test_a_warning_is_not_a_pass() -> None:
    warned = results(tools_call_error=[check("tools-call-error"), check("sep-2322-should", "WARNING", "SHOULD")])
    verdict = judge(REQUIREMENTS, warned, [], SERVED)
    assert [o.scenario for o, _ in verdict.unexpected] == ["tools-call-error"]
    assert verdict.required[0].suite_passed  # the suite's own score would have counted it


def test_a_scenario_without_its_fixture_or_without_any_success_is_not_a_pass() -> None:
    verdict = judge(REQUIREMENTS, results(), [], SERVED - {"test_error_handling"})
    [(outcome, checks)] = verdict.unexpected
    assert outcome.scenario == "tools-call-error"
    assert [c["id"] for c in checks] == [FIXTURE_MISSING]
    assert "test_error_handling" in checks[0]["errorMessage"]
    skipped = results(resources_read_text=[check("resources-read-text", "SKIPPED")])
    [(outcome, checks)] = judge(REQUIREMENTS, skipped, [], SERVED).unexpected
    assert [c["id"] for c in checks] == [NOTHING_CHECKED]


def test_a_scenario_that_did_not_run_fails() -> None:
    partial = results()
    del partial["resources-read-text"]
    [(outcome, _)] = judge(REQUIREMENTS, partial, [], SERVED).unexpected
    assert (outcome.scenario, outcome.ran) == ("resources-read-text", False)


def test_an_entry_for_a_scenario_the_revision_does_not_require_is_refused() -> None:
    entry = Expected("tasks-lifecycle", None, "not scored anyway")
    verdict = judge(REQUIREMENTS, results(), [entry], SERVED)
    assert verdict.unknown == [entry]
    assert not verdict.ok


def test_expected_failures_file_needs_a_reason_per_entry(tmp_path: Path) -> None:
    path = tmp_path / "expected.yaml"
    path.write_text(
        '"2026-07-28":\n'
        "  resources-read-text: resources are served by the next release\n"
        "  server-stateless:sep-2575-http-server-no-independent-requests-on-stream: >-\n"
        "    needs the interactive tool API\n"
    )
    loaded = load_expected(path)
    assert [(e.scenario, e.check) for e in loaded["2026-07-28"]] == [
        ("resources-read-text", None),
        ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream"),
    ]
    assert loaded["2026-07-28"][1].reason == "needs the interactive tool API"
    path.write_text('"2026-07-28":\n  resources-read-text:\n')
    with pytest.raises(ValueError, match="needs a reason"):
        load_expected(path)
    path.write_text('"2026-07-28":\n  server-stateless: whole\n  server-stateless:some-check: one check\n')
    with pytest.raises(ValueError, match="already expected to fail whole"):
        load_expected(path)


def test_results_are_read_from_the_suite_output_layout(tmp_path: Path) -> None:
    scenario_dir = tmp_path / "server-tools-call-error-2026-12-01T10-03-56-327Z"
    scenario_dir.mkdir()
    (scenario_dir / "checks.json").write_text('[{"id": "tools-call-error", "status": "SUCCESS"}]')
    assert load_results(tmp_path) == {"tools-call-error": [{"id": "tools-call-error", "status": "SUCCESS"}]}
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "checks.json").write_text("[]")
    with pytest.raises(ValueError, match="unexpected result directory"):
        load_results(tmp_path)
