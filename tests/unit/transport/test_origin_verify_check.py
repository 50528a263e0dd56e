"""E1: the origin-verify check of edge=cloudfront, without HTTP: constant-time comparison of every
accepted value, rotation by adding a value, and how often the secret is read."""

from __future__ import annotations

import hmac
import json
from typing import Any

import pytest

from mcp_platform.application.interactive.keys import KeyRingError
from mcp_platform.transport import origin_verify
from mcp_platform.transport.origin_verify import OriginVerifier

V1 = "a" * 31 + "Q" * 33
V2 = "b" * 64


class Secret:
    """A Secrets Manager secret's text, counting reads; ``value`` may change (a rotation)."""

    def __init__(self, **keys: str) -> None:
        self.keys = dict(keys)
        self.reads = 0
        self.broken = False

    def read(self) -> str:
        self.reads += 1
        if self.broken:
            raise RuntimeError("AccessDeniedException")
        return json.dumps({"current": next(iter(self.keys)), **self.keys})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def verifier(secret: Secret, clock: Clock | None = None) -> OriginVerifier:
    return OriginVerifier(secret, monotonic=clock or Clock())


@pytest.mark.parametrize(
    "presented",
    [None, "", V1[:-1], V1 + "x", V1[:-1] + "R", V1.upper(), " " + V1, V2, "\udcff"],
)
def test_anything_but_a_value_of_the_secret_is_refused(presented: str | None) -> None:
    # Given a secret holding V1 / Then a missing, empty, truncated, extended, one-byte-off,
    # case-changed, padded, foreign or undecodable value is refused
    assert verifier(Secret(k1=V1)).accepts(presented) is False


def test_every_value_of_the_secret_is_accepted() -> None:
    # Given a secret mid-rotation, holding the old value and the new one / Then both pass
    check = verifier(Secret(k1=V1, k2=V2))
    assert check.accepts(V1) and check.accepts(V2)


def test_the_comparison_is_constant_time_over_every_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the comparisons recorded (a naive `==`, `in` or `startswith` check makes none)
    calls: list[tuple[Any, Any]] = []
    compare = hmac.compare_digest

    def recording(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return compare(a, b)

    monkeypatch.setattr(origin_verify.hmac, "compare_digest", recording)
    check = verifier(Secret(k1=V1, k2=V2))
    # When the first value, the second and a short wrong one are presented
    for presented, accepted in ((V1, True), (V2, True), ("short", False)):
        calls.clear()
        assert check.accepts(presented) is accepted
        # Then each is compared with every accepted value, even after a match, as digests of one
        # length (so neither the length nor where the first difference is shows in the time)
        assert len(calls) == 2, presented
        assert all(isinstance(a, bytes) and len(a) == len(b) == 32 for a, b in calls)


def test_the_secret_is_read_once_then_cached() -> None:
    secret, clock = Secret(k1=V1), Clock()
    check = verifier(secret, clock)
    for second in range(0, 299, 7):
        clock.now = second
        assert check.accepts(V1)
    assert secret.reads == 1


def test_a_request_without_the_header_never_reads_the_secret() -> None:
    # Given a flood of direct calls to the Function URL without the header
    secret = Secret(k1=V1)
    check = verifier(secret)
    assert not any(check.accepts(None) for _ in range(100))
    # Then the secret was not read for them
    assert secret.reads == 0


def test_a_rotation_reaches_a_warm_instance_and_wrong_values_read_at_most_every_30_s() -> None:
    # Given an instance that read V1, then V2 added to the secret (the distribution not yet told)
    secret, clock = Secret(k1=V1), Clock()
    check = verifier(secret, clock)
    assert check.accepts(V1)
    secret.keys["k2"] = V2
    # When V2 arrives within 30 s of the read: refused, and the secret is not read again
    clock.now = 10
    assert not check.accepts(V2) and secret.reads == 1
    # And a flood of wrong values meanwhile reads nothing either
    clock.now = 20
    assert not any(check.accepts("wrong" * 13) for _ in range(50)) and secret.reads == 1
    # Then from 30 s on, an unknown value reads the secret once: V2 is accepted, V1 still too
    clock.now = 31
    assert check.accepts(V2) and check.accepts(V1) and secret.reads == 2
    # And once V1 is dropped, the periodic refresh (300 s) stops accepting it
    del secret.keys["k1"]
    clock.now = 31 + 300
    assert not check.accepts(V1) and check.accepts(V2)


def test_an_unreadable_or_unusable_secret_raises_without_quoting_it() -> None:
    secret = Secret(k1=V1)
    secret.broken = True
    with pytest.raises(KeyRingError, match="origin-verify secret unreadable"):
        verifier(secret).accepts(V1)
    short = Secret(k1="too-short")
    with pytest.raises(KeyRingError) as raised:
        verifier(short).accepts("too-short")
    assert "too-short" not in str(raised.value)
