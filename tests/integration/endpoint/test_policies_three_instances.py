"""G4 across instances: three endpoint instances serve one policy folder. A Cedar ``forbid`` on an
argument value refuses that call on every instance, in both eras, runs and commits nothing, and
its event records the denial; lists show only what the caller may use and hide nothing a call may
use. Each property is shown failing against a naive version at the end of this module: the check
switched off (the forbidden note is committed), and lists decided as calls with no arguments (a
tool whose calls are limited by an argument disappears).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

import pytest

from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.application.auth.base import Principal
from mcp_platform.application.policies.ports import PolicyEngine
from mcp_platform.protocol.jsonrpc import FORBIDDEN
from tests.support.endpoint import AwsStack, Instance, endpoint_instance, fresh_stack
from tests.support.kinesis import read_whole_stream
from tests.support.mcp_http import CAPS_META, call, final_message, initialize, modern_call

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws")
POLICIES = """
@id("everyone")
permit(principal, action in Action::"call_tool", resource);

@id("no-secrets-in-notes")
forbid(principal, action == Action::"append_note", resource)
when { context.arguments.text like "*secret*" };

@id("short-countdowns")
forbid(principal, action == Action::"countdown", resource)
when { context.arguments has steps && context.arguments.steps > 3 };

@id("audit-for-admins")
forbid(principal, action == Action::"session_audit", resource)
unless { principal in Group::"admins" };

@id("acme-echo-and-sessions")
forbid(principal, action in Action::"call_tool", resource)
when { principal has tenant && principal.tenant == "acme" }
unless { action in [Action::"echo", Action::"open_session", Action::"append_note", Action::"read_notes"] };
"""


@pytest.fixture
def three(aws: AwsStack, tmp_path: Path) -> Iterator[list[Instance]]:
    (tmp_path / "rules.cedar").write_text(POLICIES)
    with ExitStack() as stack:
        yield [stack.enter_context(endpoint_instance(aws, MCP_POLICIES_DIR=str(tmp_path))) for _ in range(3)]


@pytest.fixture
def keys(aws: AwsStack) -> dict[str, str]:
    store = ApiKeyStore(aws.table, aws.client("dynamodb"))
    return {
        "alice": store.mint("alice"),
        "admin": store.mint("root", groups=["admins"]),
        "carol": store.mint("carol", tenant="acme"),
    }


def tool_call(url: str, key: str, n: int, name: str, arguments: dict[str, object]) -> tuple[int, dict[str, object]]:
    response = modern_call(url, key, n, "tools/call", {"name": name, "arguments": arguments, "_meta": CAPS_META})
    return response.status_code, final_message(response)


def listed(url: str, key: str) -> list[str]:
    answer = modern_call(url, key, 0, "tools/list", {"_meta": CAPS_META}).json()["result"]
    assert answer["cacheScope"] == "private"  # it depends on who asks
    return [tool["name"] for tool in answer["tools"]]


def assert_forbidden_note_refused_everywhere(three: list[Instance], key: str) -> None:
    """A session opened on one instance; its forbidden note refused on each instance (-31010,
    HTTP 403, naming the policy); permitted notes committed; the session holds only those."""
    _, opened = tool_call(three[0].url, key, 1, "open_session", {})
    session = opened["result"]["structuredContent"]["session"]  # type: ignore[index]
    for n, instance in enumerate(three):
        status, refused = tool_call(instance.url, key, 10 + n, "append_note", {"session": session, "text": "a secret"})
        assert status == 403, refused
        error = refused["error"]
        assert error["code"] == FORBIDDEN  # type: ignore[index]
        assert error["data"] == {"action": "call_tool", "name": "append_note", "policies": ["no-secrets-in-notes"]}  # type: ignore[index]
        status, _ = tool_call(instance.url, key, 20 + n, "append_note", {"session": session, "text": f"note {n}"})
        assert status == 200
    _, read = tool_call(three[2].url, key, 30, "read_notes", {"session": session})
    notes = read["result"]["structuredContent"]["notes"]  # type: ignore[index]
    assert [note["text"] for note in notes] == ["note 0", "note 1", "note 2"]


def assert_lists_show_what_may_be_used(three: list[Instance], keys: dict[str, str]) -> None:
    """On every instance: alice sees append_note and countdown (some calls of each are permitted)
    but not session_audit; the admin sees session_audit; carol of acme sees her four tools only."""
    for instance in three:
        alices = listed(instance.url, keys["alice"])
        assert {"append_note", "countdown", "echo"} <= set(alices) and "session_audit" not in alices
        assert "session_audit" in listed(instance.url, keys["admin"])
        assert listed(instance.url, keys["carol"]) == ["append_note", "echo", "open_session", "read_notes"]


def test_a_forbid_on_an_argument_value_refuses_that_call_on_every_instance(
    three: list[Instance], keys: dict[str, str], aws: AwsStack
) -> None:
    """Given notes containing "secret" forbidden, when alice appends one on each instance, then
    each is refused before it runs and nothing is committed; her other notes are; each refusal's
    event says policy_denied, names no session, and the tool; countdown past 3 steps is refused
    and countdown within them runs."""
    assert_forbidden_note_refused_everywhere(three, keys["alice"])
    assert tool_call(three[1].url, keys["alice"], 40, "countdown", {"steps": 5, "interval_ms": 1})[0] == 403
    assert tool_call(three[2].url, keys["alice"], 41, "countdown", {"steps": 2, "interval_ms": 1})[0] == 200
    events = [json.loads(record["Data"]) for record in read_whole_stream(aws.client("kinesis"), aws.stream)]
    denied = [event for event in events if event.get("error_code") == "policy_denied"]
    assert sorted(event["tool"] for event in denied) == ["append_note"] * 3 + ["countdown"]
    assert all(event["status"] == "error" and "session_id" not in event for event in denied)
    committed = [event for event in events if event["tool"] == "append_note" and "error_code" not in event]
    assert len(committed) == 3


def test_a_forbidden_call_in_a_2025_session_is_refused_in_its_stream(
    three: list[Instance], keys: dict[str, str]
) -> None:
    """2025: the refusal is the same JSON-RPC error, in a 200 answer, on any instance."""
    session = initialize(three[0].url, keys["alice"])
    params = {"name": "countdown", "arguments": {"steps": 9, "interval_ms": 1}}
    for n, instance in enumerate(three):
        answer = call(instance.url, keys["alice"], session, 100 + n, "tools/call", params)
        assert answer.status_code == 200
        assert final_message(answer)["error"]["code"] == FORBIDDEN
        names = [
            t["name"]
            for t in call(instance.url, keys["alice"], session, 200 + n, "tools/list").json()["result"]["tools"]
        ]
        assert "countdown" in names and "session_audit" not in names


def test_lists_show_only_what_the_caller_may_use_on_every_instance(three: list[Instance], keys: dict[str, str]) -> None:
    assert_lists_show_what_may_be_used(three, keys)
    # A hidden tool is refused too, for a tenant's caller as for a group's.
    assert tool_call(three[0].url, keys["carol"], 1, "countdown", {"steps": 1})[0] == 403
    assert tool_call(three[1].url, keys["alice"], 2, "session_audit", {"session": "x"})[0] == 403


def naive_lists(engine: PolicyEngine) -> Callable[[Principal, str, Sequence[str]], list[bool]]:
    """Lists decided as calls with no arguments: what a list would show without partial evaluation."""

    def usable(caller: Principal, action: str, names: Sequence[str]) -> list[bool]:
        return [engine.decide(caller, action, name, {}).permitted for name in names]

    return usable


def test_the_properties_fail_against_naive_versions(three: list[Instance], keys: dict[str, str]) -> None:
    """The controls. With the check off (no policies on the instances), the forbidden note is
    committed; with lists decided as calls with no arguments (a naive list: the forbid on the
    note's text cannot be evaluated and refuses), append_note disappears from alice's list. So the
    tests above tell the real thing from both."""
    policies = [instance.endpoint.policies for instance in three]
    for instance in three:
        instance.endpoint.policies = None
    with pytest.raises(AssertionError):
        assert_forbidden_note_refused_everywhere(three, keys["alice"])
    for instance, kept in zip(three, policies, strict=True):
        assert kept is not None
        instance.endpoint.policies = kept
        kept.engine.usable = naive_lists(kept.engine)
    with pytest.raises(AssertionError):
        assert_lists_show_what_may_be_used(three, keys)
