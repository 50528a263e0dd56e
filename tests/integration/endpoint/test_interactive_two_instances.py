"""2026-07-28 multi-round requests over two instances on one emulator (a fresh one per test).

Each test of a cross-instance or security property has a control beside it that runs the same
scenario against a naive version (a key per process, one-time use remembered per process, a
state trusted without its MAC, an input-required round committed) and shows the same
assertions fail.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest

from examples import conformance
from mcp_platform.adapters.dynamodb import request_state_vault as vault_module
from mcp_platform.adapters.dynamodb.request_state_vault import RequestStateVault
from mcp_platform.application.interactive import keys as key_module
from mcp_platform.application.interactive.rounds import input_required_result
from mcp_platform.application.interactive.state import RoundState
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.interactive import InputRequired
from mcp_platform.protocol.jsonrpc import Request
from mcp_platform.protocol.versions import IDEMPOTENCY_KEY_META
from tests.support import ask_tools
from tests.support.endpoint import AwsStack, Instance, alice_and_bob, endpoint_instance, fresh_stack
from tests.support.interactive import accept, modern_meta, round_trip, text_of

pytestmark = pytest.mark.integration
MULTI = "test_input_required_result_multi_round"
CONFIRM = "test_input_required_result_request_state"


aws = pytest.fixture(fresh_stack, name="aws")  # a fresh emulator per test


keys = pytest.fixture(alice_and_bob, name="keys")


@pytest.fixture()
def pair(aws: AwsStack) -> Iterator[tuple[Instance, Instance]]:
    with (
        endpoint_instance(aws, extra_tools=(conformance, ask_tools)) as a,
        endpoint_instance(aws, extra_tools=(conformance, ask_tools)) as b,
    ):
        yield a, b
        # Every message the instances sent, checked against the official SDK's models.
        assert a.recorder.validate_all() > 0 and b.recorder.validate_all() > 0


def assert_three_rounds_across_instances(pair: tuple[Instance, Instance], key: str) -> None:
    a, b = pair
    first = round_trip(a.url, key, 1, MULTI, {})
    assert first["result"]["resultType"] == "input_required", first
    step1 = {"inputResponses": {"step1": accept(name="Alice")}, "requestState": first["result"]["requestState"]}
    second = round_trip(b.url, key, 2, MULTI, {}, **step1)
    assert "result" in second and list(second["result"]["inputRequests"]) == ["step2"], f"round 2 refused: {second}"
    step2 = {"inputResponses": {"step2": accept(color="blue")}, "requestState": second["result"]["requestState"]}
    third = round_trip(a.url, key, 3, MULTI, {}, **step2)
    assert text_of(third) == "Alice likes blue."


def test_an_elicitation_started_on_one_instance_is_answered_through_the_other(
    pair: tuple[Instance, Instance], keys: dict[str, str]
) -> None:
    """Given round 1 on A, when the retries alternate B, A, then each instance verifies the other's
    requestState (one shared key) and the call completes with both answers."""
    assert_three_rounds_across_instances(pair, keys["alice"])


class PerProcessKeys:
    """Control: each instance makes its own key (what an SDK server does by default)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._key = secrets.token_bytes(32)

    def signing_key(self) -> tuple[str, bytes]:
        return "k1", self._key

    def verification_key(self, kid: str) -> bytes | None:
        return self._key if kid == "k1" else None


def test_control_a_key_per_process_fails_the_same_test(
    pair: tuple[Instance, Instance], keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key_module, "SecretKeyRing", PerProcessKeys)
    with pytest.raises(AssertionError, match="round 2 refused"):
        assert_three_rounds_across_instances(pair, keys["alice"])


def completed_state(pair: tuple[Instance, Instance], key: str) -> dict[str, Any]:
    """A retry that completed on B: its params may then be replayed anywhere."""
    first = round_trip(pair[0].url, key, 1, CONFIRM, {})
    retry = {"inputResponses": {"confirm": accept(ok=True)}, "requestState": first["result"]["requestState"]}
    assert text_of(round_trip(pair[1].url, key, 2, CONFIRM, {}, **retry)).startswith("state-ok")
    return retry


def assert_replays_refused(pair: tuple[Instance, Instance], key: str) -> None:
    retry = completed_state(pair, key)
    with ThreadPoolExecutor(2) as pool:  # both instances at once: neither may accept it
        replays = list(pool.map(lambda i: round_trip(pair[i].url, key, 10 + i, CONFIRM, {}, **retry), (0, 1)))
    for replay in replays:
        assert "error" in replay and replay["error"]["code"] == -32602, f"replay accepted: {replay}"
        assert "already used" in replay["error"]["message"]


def test_a_replayed_request_state_is_refused_on_either_instance(
    pair: tuple[Instance, Instance], keys: dict[str, str]
) -> None:
    """Given a retry that completed on B, when its requestState is replayed on A and B at once,
    then both are refused (-32602): the nonce's conditional put in the table decides."""
    assert_replays_refused(pair, keys["alice"])


def test_control_one_time_use_remembered_per_process_fails_the_same_test(
    pair: tuple[Instance, Instance], keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    used: dict[int, set[str]] = {}

    def remembered(self: RequestStateVault, state: RoundState) -> None:
        seen = used.setdefault(id(self), set())  # one set per instance's vault
        if state.nonce in seen:
            raise vault_module.StateAlreadyUsed("requestState was already used")
        seen.add(state.nonce)

    monkeypatch.setattr(RequestStateVault, "consume", remembered)
    with pytest.raises(AssertionError, match="replay accepted"):
        assert_replays_refused(pair, keys["alice"])


def forge(token: str, name: str) -> str:
    """Round 2's state with its step1 answer changed and the MAC left as it was."""
    version, kid, payload, mac = token.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["a"]["step1"]["a"]["content"]["name"] = name
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    return f"{version}.{kid}.{base64.urlsafe_b64encode(raw).decode().rstrip('=')}.{mac}"


def assert_tampering_refused(pair: tuple[Instance, Instance], keys: dict[str, str]) -> None:
    a, b = pair
    first = round_trip(a.url, keys["alice"], 1, MULTI, {})
    step1 = {"inputResponses": {"step1": accept(name="Alice")}, "requestState": first["result"]["requestState"]}
    second = round_trip(b.url, keys["alice"], 2, MULTI, {}, **step1)
    token = second["result"]["requestState"]
    step2 = {"inputResponses": {"step2": accept(color="red")}}
    for bad, who in ((forge(token, "Mallory"), "alice"), (token + "-TAMPERED", "alice"), (token, "bob")):
        refused = round_trip(a.url, keys[who], 3, MULTI, {}, **step2, requestState=bad)
        assert "error" in refused and refused["error"]["code"] == -32602, refused
    # Untouched, by its own principal, the state still completes the call.
    assert text_of(round_trip(b.url, keys["alice"], 4, MULTI, {}, **step2, requestState=token)) == "Alice likes red."


def test_a_tampered_or_foreign_request_state_is_refused(pair: tuple[Instance, Instance], keys: dict[str, str]) -> None:
    """Given round 2's state, when a forged answer, a tampered MAC, or another principal presents
    it, then each is refused (-32602) and none is used up: the genuine retry still completes."""
    assert_tampering_refused(pair, keys)


def test_control_a_state_trusted_without_its_mac_fails_the_same_test(
    pair: tuple[Instance, Instance], keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def trusting(key: bytes, token: str, binding: Any, now: float) -> RoundState:
        payload = token.split(".")[2]
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return RoundState(data["a"], data["p"], data["r"], data["e"], data["n"])

    monkeypatch.setattr(vault_module, "open_state", trusting)
    with pytest.raises(AssertionError, match="Mallory"):
        assert_tampering_refused(pair, keys)


def assert_rounds_commit_once(pair: tuple[Instance, Instance], key: str) -> None:
    a, b = pair
    handle = round_trip(a.url, key, 1, "open_session", {})["result"]["structuredContent"]["session"]
    meta = modern_meta(**{IDEMPOTENCY_KEY_META: "note-1"})
    args = {"session": handle, "tag": "t1"}
    first = round_trip(a.url, key, 2, "noted_answer", args, _meta=meta)
    assert first["result"]["resultType"] == "input_required", first
    retry = {"inputResponses": {"note": accept(note="hello")}, "requestState": first["result"]["requestState"]}
    done = round_trip(b.url, key, 3, "noted_answer", args, _meta=meta, **retry)
    assert done["result"].get("structuredContent", {}).get("note") == "hello", f"round 2 did not complete: {done}"
    again = round_trip(a.url, key, 4, "noted_answer", args, _meta=meta, **retry)  # a lost answer, retried
    assert again["result"]["structuredContent"] == done["result"]["structuredContent"]  # replayed, not re-run
    notes = round_trip(b.url, key, 5, "read_notes", {"session": handle})["result"]["structuredContent"]["notes"]
    assert [n["text"] for n in notes] == ["hello"]


def test_an_input_required_round_is_never_committed_and_the_final_one_once(
    pair: tuple[Instance, Instance], keys: dict[str, str]
) -> None:
    """Given a session tool with an idempotency key, when round 1 asks and round 2 answers (on
    another instance), then only round 2 commits; retrying round 2 replays its result."""
    assert_rounds_commit_once(pair, keys["alice"])


def test_control_committing_the_input_required_round_fails_the_same_test(
    pair: tuple[Instance, Instance], keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = ToolCallRunner._invoke

    async def committed(self: ToolCallRunner, prepared: Any, ctx: Any, deadline: float | None = None) -> dict[str, Any]:
        """The naive runner: a round's InputRequiredResult is the call's result, committed."""
        try:
            return await original(self, prepared, ctx, deadline)
        except InputRequired as needed:
            arguments = {"session": prepared.session_id, **prepared.arguments}
            request = Request("tools/call", {"name": prepared.spec.name, "arguments": arguments}, 0)
            call = SimpleNamespace(principal=ctx.principal, channel=SimpleNamespace(interaction=ctx.interaction))
            return await input_required_result(needed, request, call, self.services.interactive)  # type: ignore[arg-type]

    monkeypatch.setattr(ToolCallRunner, "_invoke", committed)
    with pytest.raises(AssertionError, match="round 2 did not complete"):
        assert_rounds_commit_once(pair, keys["alice"])
