"""Expected failures, and the verdict on a revision's results.

The file (``local/conformance/expected-failures.yaml``) maps each revision to entries
``<scenario>: <reason>`` (the whole scenario may fail) or ``<scenario>:<check-id>: <reason>``
(only that check may fail; every other check of the scenario must pass), the entry forms of
the suite's own ``--expected-failures`` baseline. A reason is required.

A scenario passes when at least one check succeeded and none failed or warned (the suite's
baseline rule: a WARNING is not a pass; its score alone counts WARNING as passed, which hides a
fixture the server does not have). The run fails on a required scenario that fails without an
entry, on an entry whose scenario or check now passes (the file stays honest), and on an entry
naming a scenario the revision does not require.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from local.conformance.coverage import missing_tools
from local.conformance.suite import Check, Requirements

FAILING = frozenset({"FAILURE", "WARNING"})
NOTHING_CHECKED = "no-successful-check"
FIXTURE_MISSING = "fixture-not-served"


@dataclass(frozen=True)
class Expected:
    scenario: str
    check: str | None  # None: the whole scenario
    reason: str

    @property
    def key(self) -> str:
        return self.scenario if self.check is None else f"{self.scenario}:{self.check}"


def load_expected(path: Path) -> dict[str, list[Expected]]:
    """revision -> its expected failures; malformed entries are refused, never skipped."""
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of revision -> entries")
    revisions: dict[str, list[Expected]] = {}
    for revision, entries in data.items():
        if not isinstance(entries, dict):
            raise ValueError(f"{path}: {revision}: expected a mapping of '<scenario>[:<check-id>]: <reason>'")
        revisions[str(revision)] = [_entry(path, str(revision), str(k), v) for k, v in entries.items()]
        whole = {e.scenario for e in revisions[str(revision)] if e.check is None}
        both = sorted({e.key for e in revisions[str(revision)] if e.check is not None and e.scenario in whole})
        if both:
            raise ValueError(f"{path}: {revision}: {', '.join(both)} repeat a scenario already expected to fail whole")
    return revisions


def _entry(path: Path, revision: str, key: str, reason: Any) -> Expected:
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(f"{path}: {revision}: {key}: every expected failure needs a reason")
    scenario, _, check = key.partition(":")
    if not scenario or (key.endswith(":") and not check):
        raise ValueError(f"{path}: {revision}: {key!r} is not '<scenario>' or '<scenario>:<check-id>'")
    return Expected(scenario, check or None, " ".join(reason.split()))


@dataclass(frozen=True)
class Outcome:
    scenario: str
    checks: list[Check]
    ran: bool = True
    missing_fixtures: tuple[str, ...] = ()  # tools the scenario calls that tools/list does not name

    @property
    def failing(self) -> list[Check]:
        failing = [c for c in self.checks if c.get("status") in FAILING]
        if self.missing_fixtures:
            message = f"not served: {', '.join(self.missing_fixtures)} (checks met by an error test nothing)"
            failing.append({"id": FIXTURE_MISSING, "status": "FAILURE", "errorMessage": message})
        if failing or any(c.get("status") == "SUCCESS" for c in self.checks):
            return failing
        # Only skipped or informational checks: the scenario tested nothing, which is no pass.
        return [{"id": NOTHING_CHECKED, "status": "FAILURE", "errorMessage": "no check succeeded (all skipped/info)"}]

    @property
    def passed(self) -> bool:
        return self.ran and not self.failing

    @property
    def skipped(self) -> bool:
        """The suite skipped every check itself (e.g. tasks-status-notifications, whose harness
        awaits a rewrite): nothing was judged, so it is neither a pass nor a failure."""
        return self.ran and bool(self.checks) and all(c.get("status") == "SKIPPED" for c in self.checks)

    @property
    def suite_passed(self) -> bool:
        """How the suite's own score counts it: no FAILURE (warnings and empty runs pass)."""
        return self.ran and not any(c.get("status") == "FAILURE" for c in self.checks)

    def status_of(self, check_id: str) -> set[str]:
        return {str(c.get("status")) for c in [*self.checks, *self.failing] if c.get("id") == check_id}


def outcome(scenario: str, results: Mapping[str, list[Check]], served: set[str]) -> Outcome:
    if scenario not in results:
        missing = {"id": scenario, "status": "FAILURE", "errorMessage": "no checks.json: the scenario did not run"}
        return Outcome(scenario, [missing], ran=False)
    return Outcome(scenario, results[scenario], missing_fixtures=missing_tools(scenario, served))


@dataclass
class Verdict:
    revision: str
    required: list[Outcome]
    not_scored: list[tuple[Outcome, str]]  # with the requirement set's reason
    expected: list[tuple[Outcome, list[Expected]]] = field(default_factory=list)
    unexpected: list[tuple[Outcome, list[Check]]] = field(default_factory=list)
    stale: list[Expected] = field(default_factory=list)
    unknown: list[Expected] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.unexpected or self.stale or self.unknown or self.failed_extensions)

    @property
    def failed_extensions(self) -> list[Outcome]:
        """Extension scenarios the suite runs but does not score (tasks): this platform serves the
        extensions it advertises, so each of them must pass all the same."""
        return [o for o, reason in self.not_scored if reason == "extension" and not o.passed and not o.skipped]

    @property
    def passed(self) -> list[Outcome]:
        return [o for o in self.required if o.passed]


def judge(
    requirements: Requirements,
    results: Mapping[str, list[Check]],
    expected: Iterable[Expected],
    served: set[str],
) -> Verdict:
    """``served``: the tool names the server lists (see ``coverage``)."""
    entries = list(expected)
    verdict = Verdict(
        requirements.revision,
        [outcome(s, results, served) for s in requirements.required],
        [(outcome(s, results, served), reason) for s, reason in requirements.not_scored.items()],
    )
    verdict.unknown = [e for e in entries if e.scenario not in requirements.required]
    for result in verdict.required:
        mine = [e for e in entries if e.scenario == result.scenario]
        whole = [e for e in mine if e.check is None]
        if whole:
            if result.passed:
                verdict.stale.extend(whole)
            else:
                verdict.expected.append((result, whole))
            continue
        excused = {e.check for e in mine}
        uncovered = [c for c in result.failing if c.get("id") not in excused]
        verdict.stale.extend(e for e in mine if not result.status_of(str(e.check)) & FAILING)
        if uncovered:
            verdict.unexpected.append((result, uncovered))
        elif result.failing:
            verdict.expected.append((result, [e for e in mine if result.status_of(str(e.check)) & FAILING]))
    return verdict
