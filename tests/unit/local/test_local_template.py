"""The local platform's synth reads the governance variables (G1, G2) and the profile:
`MCP_RATE_LIMITS`, `MCP_QUOTAS` and `LOCAL_PROFILE` in the environment are the context keys
`rate_limits`, `quotas` and `profile` of every template it synthesizes (`make dev`,
`make dev-second`, `python -m local.ops`)."""

from __future__ import annotations

import pytest

from local.template import environment_context, synthesize


def test_the_variables_become_the_context_keys_verbatim() -> None:
    """Given both variables (JSON text, as a shell passes it), then each is its context key's
    value unchanged: synth validates and canonicalizes it as it does a `-c` value."""
    environ = {
        "MCP_RATE_LIMITS": '{"principal": "5/minute"}',
        "MCP_QUOTAS": '{"principal": "100/day"}',
        "MCP_PORT": "8000",
    }
    assert environment_context(environ) == {
        "rate_limits": '{"principal": "5/minute"}',
        "quotas": '{"principal": "100/day"}',
    }


def test_unset_or_blank_variables_set_nothing() -> None:
    """Given neither variable, or blank ones, then no key: the stack's default (off) applies."""
    assert environment_context({}) == {}
    assert environment_context({"MCP_RATE_LIMITS": "", "MCP_QUOTAS": "  "}) == {}
    assert environment_context({"MCP_QUOTAS": '{"principal": "100/day"}'}) == {"quotas": '{"principal": "100/day"}'}


def test_a_bad_rule_stops_with_the_variable_and_the_rule_named() -> None:
    """Given a rule synth refuses, when the local platform synthesizes, then it exits with one
    line naming the key, the rule and the variable that set it, not a traceback."""
    with pytest.raises(SystemExit) as stopped:
        synthesize(environ={"MCP_RATE_LIMITS": '{"tool:search": "10/fortnight"}'})
    message = str(stopped.value.code)
    assert message.startswith("configuration error: rate_limits: rule 'tool:search' must be")
    assert message.endswith("got '10/fortnight' (set by MCP_RATE_LIMITS)")


def test_local_profile_is_the_profile_key() -> None:
    """Given LOCAL_PROFILE=minimal, then the context key `profile` is `minimal` (Cost: the minimal
    profile on `make dev`); an unknown profile stops the start naming the variable that set it."""
    assert environment_context({"LOCAL_PROFILE": "minimal"}) == {"profile": "minimal"}
    assert environment_context({"LOCAL_PROFILE": " "}) == {}
    with pytest.raises(SystemExit) as stopped:
        synthesize(environ={"LOCAL_PROFILE": "tiny"})
    message = str(stopped.value.code)
    assert message.startswith("configuration error: CDK context 'profile' must be one of minimal")
    assert message.endswith("(set by LOCAL_PROFILE)")
