"""What a conformance run prints: a tally per revision, then anything that fails the run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from local.conformance.baseline import Outcome, Verdict
from local.conformance.suite import Check

MESSAGE_CHARS = 240


def tally(verdict: Verdict) -> list[str]:
    required = len(verdict.required)
    suite_score = sum(o.suite_passed for o in verdict.required)
    lines = [
        f"{verdict.revision}: {len(verdict.passed)}/{required} required scenarios pass"
        f" (the suite's own score: {suite_score}/{required}, which counts warnings and empty runs as passes);"
        f" {len(verdict.expected)} expected failures, {len(verdict.unexpected)} unexpected,"
        f" {len(verdict.stale)} stale entries"
    ]
    by_reason: Counter[str] = Counter()
    passing: Counter[str] = Counter()
    for result, reason in verdict.not_scored:
        by_reason[reason] += 1
        passing[reason] += result.passed
    if by_reason:
        parts = ", ".join(f"{reason} {passing[reason]}/{count}" for reason, count in sorted(by_reason.items()))
        lines.append(f"  not scored (reported only): {parts}")
    return lines


def details(verdict: Verdict, expected_path: Path) -> list[str]:
    lines = []
    for _result, entries in verdict.expected:
        for entry in entries:
            lines.append(f"  expected    {entry.key}: {entry.reason}")
    for result, checks in verdict.unexpected:
        lines.append(f"  UNEXPECTED  {result.scenario} fails (not in {expected_path.name}):")
        lines += [f"      {_check_line(check)}" for check in checks]
    for entry in verdict.stale:
        lines.append(f"  STALE       {entry.key} no longer fails: remove it from {expected_path.name}")
    for entry in verdict.unknown:
        lines.append(f"  UNKNOWN     {entry.key} is not a required scenario of {verdict.revision}")
    for result, reason in verdict.not_scored:
        mark = "pass" if result.passed else "skipped by the suite" if result.skipped else "fail"
        failing_extension = reason == "extension" and not result.passed and not result.skipped
        must = " (an extension this platform serves: it must pass)" if failing_extension else ""
        lines.append(f"  not scored  {result.scenario} ({reason}): {mark}{_first_failure(result)}{must}")
    return lines


def _check_line(check: Check) -> str:
    message = " ".join(str(check.get("errorMessage") or "").split())
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 3] + "..."
    return f"{check.get('status')} {check.get('id')}: {message}"


def _first_failure(result: Outcome) -> str:
    failing = result.failing
    if not failing:
        return ""
    more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
    return f" - {_check_line(failing[0])}{more}"


def summary(verdicts: list[Verdict], suite: str, seconds: float, proxy_counts: list[int]) -> dict[str, Any]:
    """The machine-readable record of a run (build/conformance/summary.json)."""
    return {
        "suite": suite,
        "seconds": round(seconds, 1),
        "requests_per_instance": proxy_counts,
        "revisions": {
            v.revision: {
                "required": len(v.required),
                "passed": sorted(o.scenario for o in v.passed),
                "expected_failures": sorted(e.key for _, entries in v.expected for e in entries),
                "unexpected": sorted(o.scenario for o, _ in v.unexpected),
                "stale": sorted(e.key for e in v.stale),
                "not_scored": {o.scenario: {"reason": r, "passed": o.passed} for o, r in v.not_scored},
            }
            for v in verdicts
        },
    }


def write_summary(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
