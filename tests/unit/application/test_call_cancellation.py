"""2025 cancellation as a use case (application.cancellation), against an in-memory flag store:
a local call is stopped in place, a call elsewhere gets a flag, a streamed call is watched for
its flag, and only what can be cancelled that way is watched."""

from __future__ import annotations

import asyncio

import pytest

from mcp_platform.application.cancellation import CallCancellation, CancelCheckFailed
from mcp_platform.protocol.jsonrpc import RequestId
from mcp_platform.protocol.request_context import RequestContext, TransportSession

SESSION = "s" * 32


class MemoryFlags:
    """The flag store as a set; ``failures`` reads fail first (throttled, unreachable)."""

    def __init__(self, failures: int = 0) -> None:
        self.flags: set[tuple[str, RequestId, str]] = set()
        self.reads = 0
        self.failures = failures

    def request(self, session_id: str, request_id: RequestId, *, owner: str) -> None:
        self.flags.add((session_id, request_id, owner))

    def is_requested(self, session_id: str, request_id: RequestId, *, owner: str) -> bool:
        self.reads += 1
        if self.failures:
            self.failures -= 1
            raise CancelCheckFailed("throttled")
        return (session_id, request_id, owner) in self.flags


def legacy_call(principal: str = "alice") -> RequestContext:
    return RequestContext(principal, "2025-11-25", False, transport=TransportSession(SESSION))


def test_a_local_call_is_cancelled_in_place_and_leaves_no_flag() -> None:
    flags = MemoryFlags()
    cancellation = CallCancellation(flags)
    call = legacy_call()

    async def scenario() -> None:
        with cancellation.running(call, 7):
            await cancellation.cancel(SESSION, 7, owner="alice")
        assert call.cancelled.is_set()

    asyncio.run(scenario())
    assert flags.flags == set()


def test_another_principal_cannot_reach_the_call_and_an_ended_call_is_forgotten() -> None:
    flags = MemoryFlags()
    cancellation = CallCancellation(flags)
    call = legacy_call()

    async def scenario() -> None:
        with cancellation.running(call, 7):
            await cancellation.cancel(SESSION, 7, owner="mallory")  # not alice's: a flag of mallory's
        assert not call.cancelled.is_set()
        await cancellation.cancel(SESSION, 7, owner="alice")  # the call has ended here

    asyncio.run(scenario())
    assert not call.cancelled.is_set()
    assert flags.flags == {(SESSION, 7, "mallory"), (SESSION, 7, "alice")}


def test_a_watched_call_stops_on_its_flag_and_a_failed_check_is_retried() -> None:
    flags = MemoryFlags(failures=1)
    cancellation = CallCancellation(flags, poll_seconds=0.01)
    call = legacy_call()

    async def scenario() -> None:
        watch = cancellation.watch(call, 7)
        assert watch is not None
        task = asyncio.create_task(watch)
        await asyncio.sleep(0.05)
        assert not call.cancelled.is_set()  # no flag yet (and one check failed)
        await CallCancellation(flags).cancel(SESSION, 7, owner="alice")  # posted to "another instance"
        await asyncio.wait_for(task, timeout=2)

    asyncio.run(scenario())
    assert call.cancelled.is_set() and flags.reads >= 2


def test_a_flag_left_by_another_principal_does_not_stop_the_call() -> None:
    flags = MemoryFlags()
    flags.request(SESSION, 7, owner="mallory")
    cancellation = CallCancellation(flags, poll_seconds=0.01)
    call = legacy_call()

    async def scenario() -> None:
        watch = cancellation.watch(call, 7)
        assert watch is not None
        task = asyncio.create_task(watch)
        await asyncio.sleep(0.05)
        task.cancel()

    asyncio.run(scenario())
    assert not call.cancelled.is_set() and flags.reads >= 1


def test_only_2025_calls_in_a_transport_session_are_watched_and_only_with_a_flag_store() -> None:
    flags = MemoryFlags()
    modern = RequestContext("alice", "2026-07-28", True)
    sessionless = RequestContext("alice", "2025-11-25", False)
    assert CallCancellation(flags).watch(modern, 7) is None  # its client closes the stream instead
    assert CallCancellation(flags).watch(sessionless, 7) is None
    assert CallCancellation().watch(legacy_call(), 7) is None
    watch = CallCancellation(flags).watch(legacy_call(), 7)
    assert watch is not None
    watch.close()  # never started


def test_the_poll_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        CallCancellation(MemoryFlags(), poll_seconds=0)
