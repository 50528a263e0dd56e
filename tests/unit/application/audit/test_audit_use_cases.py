"""The audit use cases against in-memory ports: no DynamoDB, no DynamoDB JSON.

The diff reads values only through its ImageCodec (here a toy tagged format), and the expiry
handler's order and redelivery rules hold whatever stores the summary and the held items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_platform.application.audit.diff import diff_images
from mcp_platform.application.audit.expiry import SessionExpiryHandler
from mcp_platform.application.audit.images import WireValue
from mcp_platform.application.audit.ports import CleanupIncomplete, HeldItems
from mcp_platform.application.audit.records import ExpiredSession, StreamChange
from mcp_platform.protocol.clock import ManualClock

T0 = 1_795_000_000.0


class ToyCodec:
    """Values as {"v": python value} and lists as {"list": [...]}: not DynamoDB JSON."""

    summarised_lists = frozenset({"log"})

    def to_plain(self, value: WireValue) -> Any:
        return [self.to_plain(item) for item in value["list"]] if "list" in value else value["v"]

    def list_items(self, value: WireValue) -> Sequence[WireValue] | None:
        return value.get("list")

    def kind(self, value: WireValue) -> str:
        return "toy-list" if "list" in value else "toy"


def test_diff_reads_values_only_through_its_codec() -> None:
    # Given two images in a wire format the diff knows nothing of
    old = {"n": {"v": 1}, "gone": {"v": "x"}, "log": {"list": [{"v": "a"}]}}
    new = {"n": {"v": 2}, "big": {"v": "y" * 50}, "log": {"list": [{"v": "a"}, {"v": "b"}]}}
    # When they are diffed
    diff = diff_images(old, new, codec=ToyCodec(), value_limit=20)
    # Then values are decoded by the codec, large ones summarised with its kind, lists summarised
    assert diff.changed == {"n": {"old": 1, "new": 2}}
    assert diff.removed == {"gone": "x"}
    assert diff.added["big"]["_summary"] == "toy"
    assert diff.lists["log"]["op"] == "append" and diff.lists["log"]["appended"] == ["b"]


def expiry_change(session_id: str = "s1") -> StreamChange:
    return StreamChange(
        event_id="e1",
        event_name="REMOVE",
        sequence_number="4960000000000000000001",
        change_epoch=T0 + 100,
        pk=f"key-of-{session_id}",
        sk="meta",
        old_image={},
        new_image=None,
        session_id=session_id,
        is_ttl_removal=True,
        who={"type": "Service"},
        expired=ExpiredSession(
            created_at="2026-11-18T10:00:00Z",
            expires_at=T0,
            updated_at=None,
            owner="alice",
            kind="application",
            version=3,
        ),
    )


@dataclass
class MemoryAuditLog:
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)

    def record(self, change: StreamChange, diff: Any) -> bool:
        raise AssertionError("the expiry handler writes no change records")

    def put_summary(
        self, session_id: str, summary: Mapping[str, Any], change_epoch: float
    ) -> tuple[dict[str, Any], bool]:
        self.steps.append("summary")
        if session_id in self.summaries:  # first write wins
            return dict(self.summaries[session_id]), False
        self.summaries[session_id] = {**summary, "event_published": False}
        return dict(self.summaries[session_id]), True

    def get_summary(self, session_id: str) -> dict[str, Any] | None:
        return self.summaries.get(session_id)

    def mark_event_published(self, session_id: str, published_at_iso: str) -> None:
        self.steps.append("marked")
        self.summaries[session_id]["event_published"] = True


@dataclass
class MemoryRemains:
    keys: list[str]
    steps: list[str]
    fail: bool = False

    def held(self, session_id: str) -> HeldItems:
        return HeldItems(keys=tuple(self.keys), tool_call_starts=("2026-11-18T10:05:00Z",))

    def delete(self, session_id: str, keys: Sequence[str]) -> int:
        self.steps.append("delete")
        if self.fail:
            raise CleanupIncomplete("throttled")
        self.keys = [key for key in self.keys if key not in keys]
        return len(keys)


@dataclass
class MemoryPublisher:
    steps: list[str]
    events: list[Mapping[str, Any]] = field(default_factory=list)

    def publish(self, event: Mapping[str, Any]) -> None:
        self.steps.append("publish")
        self.events.append(event)


def test_expiry_writes_the_summary_before_deleting_and_publishes_once_across_redeliveries() -> None:
    # Given an expired session holding a tool record and its marker
    log = MemoryAuditLog()
    remains = MemoryRemains(keys=["record", "marker"], steps=log.steps, fail=True)
    publisher = MemoryPublisher(steps=log.steps)
    handler = SessionExpiryHandler(remains, log, publisher, clock=ManualClock(T0 + 200))
    # When the first delivery fails half-way through the cleanup
    with pytest.raises(CleanupIncomplete):
        handler.handle(expiry_change())
    # Then the summary was already written, from what the session held, and nothing published
    assert log.steps == ["summary", "delete"] and publisher.events == []
    assert log.summaries["s1"]["tool_calls"] == 1 and log.summaries["s1"]["final_version"] == 3
    # When the record is redelivered and the cleanup succeeds
    remains.fail = False
    outcome = handler.handle(expiry_change())
    # Then the stored summary is kept, the items are gone and the event goes out once
    assert (outcome.summary_written, outcome.deleted, outcome.event_published) == (False, 2, True)
    assert remains.keys == [] and len(publisher.events) == 1
    assert publisher.events[0]["session_id"] == "s1"
    # And a third delivery publishes nothing more
    assert handler.handle(expiry_change()).event_published is False
    assert len(publisher.events) == 1


def test_an_explicit_delete_of_the_metadata_is_not_an_expiry() -> None:
    log = MemoryAuditLog()
    handler = SessionExpiryHandler(MemoryRemains(keys=[], steps=[]), log, MemoryPublisher(steps=[]))
    change = expiry_change()
    plain = StreamChange(
        event_id=change.event_id,
        event_name="REMOVE",
        sequence_number=change.sequence_number,
        change_epoch=change.change_epoch,
        pk=change.pk,
        sk=change.sk,
        old_image={},
        new_image=None,
        session_id="s1",
        is_ttl_removal=False,
        who={"type": "Application"},
    )
    with pytest.raises(ValueError, match="not a session TTL expiry"):
        handler.handle(plain)


@dataclass
class DiffOnDemandLog(MemoryAuditLog):
    """Asks for the diff only when told to (a log that stores it only when it must)."""

    wants_diff: bool = False
    diffs: list[Any] = field(default_factory=list)

    def record(self, change: StreamChange, diff: Any) -> bool:
        if self.wants_diff:
            self.diffs.append(diff())
        return True


def _toy_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> StreamChange:
    return StreamChange("e1", "MODIFY", "1", T0, "session#s1", "metadata", old, new, "s1", False, {})


@pytest.mark.parametrize("wants_diff", [False, True])
def test_the_processor_computes_the_diff_only_when_the_log_stores_it(
    monkeypatch: pytest.MonkeyPatch, wants_diff: bool
) -> None:
    from mcp_platform.application.audit import processor as module

    # Given a change and a log that does (or does not) store its diff
    change = _toy_change({"n": {"v": 1}}, {"n": {"v": 2}})
    computed: list[int] = []

    def counted(*args: Any, **options: Any) -> Any:
        computed.append(1)
        return diff_images(*args, **options)

    monkeypatch.setattr(module, "diff_images", counted)
    log = DiffOnDemandLog(wants_diff=wants_diff)
    processor = module.AuditProcessor(lambda _: change, ToyCodec(), log, SessionExpiryHandler(None, log, None))  # type: ignore[arg-type]
    # When the record is processed
    outcome = processor.process({})
    # Then it is audited, and the diff computed only for the log that stores it
    assert outcome.action == "audited"
    assert len(computed) == (1 if wants_diff else 0)
    if wants_diff:
        assert log.diffs[0].changed == {"n": {"old": 1, "new": 2}}
