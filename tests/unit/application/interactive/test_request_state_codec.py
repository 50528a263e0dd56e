"""The 2026 requestState codec and its key ring: tamper-proof, bound, expiring, rotatable, secret.

Each refusal is shown to matter by a naive opener beside it (one that trusts the payload): the
same forged token gets through it, so the refusal is the codec's doing.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from mcp_platform.application.interactive.keys import KeyRingError, SecretKeyRing, StaticKeyRing, parse_key_set
from mcp_platform.application.interactive.state import (
    MAX_TOKEN_CHARS,
    Binding,
    InvalidRequestState,
    RoundState,
    open_state,
    seal_state,
)

KEY = b"k" * 48
OTHER_KEY = b"o" * 48
BINDING = Binding("apikey:alice", "tools/call", "d" * 64)
NOW = 1_800_000_000


def state(**changes: Any) -> RoundState:
    values: dict[str, Any] = {
        "answers": {"step1": {"q": "q1", "a": {"action": "accept", "content": {"name": "Alice"}}}},
        "pending": {"step2": "q2"},
        "round": 2,
        "expires": NOW + 900,
        "nonce": "n-1",
    }
    values.update(changes)
    return RoundState(**values)


def sealed(**changes: Any) -> str:
    return seal_state(KEY, "k1", BINDING, state(**changes))


def payload_of(token: str) -> dict[str, Any]:
    part = token.split(".")[2]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def with_payload(token: str, payload: dict[str, Any]) -> str:
    """The token with its payload replaced and its MAC kept (what a client can forge)."""
    version, kid, _, mac = token.split(".")
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return f"{version}.{kid}.{base64.urlsafe_b64encode(raw).decode().rstrip('=')}.{mac}"


def naive_open(token: str) -> RoundState:
    """The control: decode the payload and trust it (no MAC, no binding, no expiry)."""
    p = payload_of(token)
    return RoundState(p["a"], p["p"], p["r"], p["e"], p["n"])


def test_a_sealed_state_opens_to_the_same_state_for_the_same_binding() -> None:
    assert open_state(KEY, sealed(), BINDING, NOW) == state()


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda t: t + "-TAMPERED", id="suffix (the conformance scenario)"),
        pytest.param(lambda t: t[:-2] + ("AA" if not t.endswith("AA") else "BB"), id="mac bytes"),
        pytest.param(lambda t: t.replace(".", ".x", 1), id="version"),
        pytest.param(lambda t: t.rsplit(".", 1)[0], id="mac removed"),
        pytest.param(lambda t: t.replace("k1", "k1!", 1), id="key id outside its alphabet"),
        pytest.param(lambda t: t[:-4] + "+/==", id="mac outside base64url"),
    ],
)
def test_any_altered_byte_is_refused(mutate: Any) -> None:
    with pytest.raises(InvalidRequestState, match="failed verification"):
        open_state(KEY, mutate(sealed()), BINDING, NOW)


def test_forged_answers_are_refused_and_a_naive_opener_would_take_them() -> None:
    token = sealed()
    forged_payload = payload_of(token)
    forged_payload["a"]["step1"]["a"]["content"]["name"] = "Mallory"
    forged = with_payload(token, forged_payload)
    with pytest.raises(InvalidRequestState):
        open_state(KEY, forged, BINDING, NOW)
    # Control: without the MAC check the forged answer would be used as the user's.
    assert naive_open(forged).answers["step1"]["a"]["content"]["name"] == "Mallory"


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(Binding("apikey:bob", BINDING.method, BINDING.digest), id="another principal"),
        pytest.param(Binding(BINDING.principal, "prompts/get", BINDING.digest), id="another method"),
        pytest.param(Binding(BINDING.principal, BINDING.method, "e" * 64), id="other arguments"),
    ],
)
def test_a_state_is_refused_on_any_other_request(other: Binding) -> None:
    token = sealed()
    with pytest.raises(InvalidRequestState):
        open_state(KEY, token, other, NOW)
    assert naive_open(token).answers  # control: nothing in the token itself names the binding


def test_an_expired_state_is_refused_with_its_reason() -> None:
    token = sealed(expires=NOW + 10)
    assert open_state(KEY, token, BINDING, NOW + 9).round == 2
    with pytest.raises(InvalidRequestState, match="expired"):
        open_state(KEY, token, BINDING, NOW + 10)
    # A client moving the expiry forward breaks the MAC.
    stretched = payload_of(token) | {"e": NOW + 10_000}
    with pytest.raises(InvalidRequestState, match="failed verification"):
        open_state(KEY, with_payload(token, stretched), BINDING, NOW + 10)


def test_another_key_does_not_open_it_and_oversized_states_are_refused_both_ways() -> None:
    with pytest.raises(InvalidRequestState):
        open_state(OTHER_KEY, sealed(), BINDING, NOW)
    huge = {"big": {"q": "q", "a": {"text": "x" * MAX_TOKEN_CHARS}}}
    with pytest.raises(ValueError, match="more than"):
        sealed(answers=huge)
    with pytest.raises(InvalidRequestState):
        open_state(KEY, "s1.k1." + "A" * MAX_TOKEN_CHARS + ".AAAA", BINDING, NOW)


def test_key_sets_need_a_current_key_of_enough_characters() -> None:
    current, keys = parse_key_set(json.dumps({"current": "k2", "k1": "a" * 40, "k2": "b" * 40}))
    assert current == "k2" and set(keys) == {"k1", "k2"}
    for bad in ("not json", json.dumps({"k1": "a" * 40}), json.dumps({"current": "k1", "k1": "short"})):
        with pytest.raises(KeyRingError):
            parse_key_set(bad)


class FakeSecrets:
    """A secret whose value the test rotates; it counts the reads."""

    def __init__(self, value: dict[str, str]) -> None:
        self.value = value
        self.reads = 0

    def read(self) -> str:
        self.reads += 1
        return json.dumps(self.value)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_secret_is_read_on_first_use_cached_and_rotation_keeps_old_states_valid() -> None:
    secrets = FakeSecrets({"current": "k1", "k1": "a" * 40})
    clock = Clock()
    ring = SecretKeyRing(secrets, refresh_seconds=300, miss_refresh_seconds=30, monotonic=clock)
    assert secrets.reads == 0  # nothing is read before the first state
    kid, key = ring.signing_key()
    old_token = seal_state(key, kid, BINDING, state())
    ring.signing_key()
    assert secrets.reads == 1  # cached
    # Rotation: k2 added and made current, k1 kept while its states may still come back.
    secrets.value = {"current": "k2", "k1": "a" * 40, "k2": "b" * 40}
    clock.now = 31
    assert ring.verification_key("k2") is not None  # an unknown key id: read again at once
    clock.now = 301
    assert ring.signing_key()[0] == "k2"
    old_key = ring.verification_key("k1")
    assert old_key is not None and open_state(old_key, old_token, BINDING, NOW).round == 2
    # k1 dropped after its states expired: its states no longer open anywhere.
    secrets.value = {"current": "k2", "k2": "b" * 40}
    clock.now = 602
    assert ring.verification_key("k1") is None


def test_unknown_key_ids_do_not_read_the_secret_on_every_request() -> None:
    secrets = FakeSecrets({"current": "k1", "k1": "a" * 40})
    ring = SecretKeyRing(secrets, monotonic=Clock())
    for _ in range(5):
        assert ring.verification_key("forged") is None
    assert secrets.reads == 1  # a client inventing key ids cannot make us hammer Secrets Manager


def test_key_material_never_appears_in_errors_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    material = "s3cr3t-" + "z" * 40
    caplog.set_level(logging.DEBUG)
    with pytest.raises(KeyRingError) as refused:
        parse_key_set(json.dumps({"current": "k1", "k1": material})[:-3])  # truncated JSON
    assert material not in str(refused.value) and refused.value.__cause__ is None
    kid, key = StaticKeyRing("k1", {"k1": material.encode()}).signing_key()
    token = seal_state(key, kid, BINDING, state())
    assert material not in token and material.encode() not in base64.urlsafe_b64decode(token.split(".")[3] + "==")
    assert material not in caplog.text
