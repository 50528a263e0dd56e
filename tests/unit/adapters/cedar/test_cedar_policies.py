"""G4: Cedar policies over the platform's own tools, decided as the endpoint decides them
(``mcp_platform.testing.PolicyCheck``, the Cedar adapter behind it): a group's tool, an argument
limit, a tenant's subset; what lists show; what is refused rather than decided on a guess."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from mcp_platform import ToolContext, tool
from mcp_platform.adapters.cedar.schema import CatalogSchema, Unrepresentable
from mcp_platform.application.policies.ports import PolicyError
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.testing import PolicyCheck
from tests.support import platform_tools

EVERYONE = """
@id("everyone")
permit(principal, action in Action::"call_tool", resource);
"""
RULES = {
    "calls.cedar": EVERYONE
    + """
@id("countdown-limit")
forbid(principal, action == Action::"countdown", resource)
when { context.arguments has steps && context.arguments.steps > 3 };

@id("audit-for-admins")
forbid(principal, action == Action::"session_audit", resource)
unless { principal in Group::"admins" };
""",
    "tenants.cedar": """
@id("acme-sees-echo-only")
forbid(principal, action in Action::"call_tool", resource)
when { principal has tenant && principal.tenant == "acme" }
unless { action == Action::"echo" };
""",
}


@pytest.fixture(scope="module")
def check() -> PolicyCheck:
    return PolicyCheck(platform_tools, policies=RULES)


def test_a_forbid_on_an_argument_value_refuses_that_call_only(check: PolicyCheck) -> None:
    """Given steps > 3 forbidden, then countdown(steps=2) is permitted, steps=5 refused naming the
    policy, and a call that leaves steps to its default is permitted."""
    assert check.may_call("countdown", {"steps": 2, "interval_ms": 1})
    refused = check.decide("call_tool", "countdown", {"steps": 5})
    assert (refused.permitted, refused.policies) == (False, ("countdown-limit",))
    assert check.may_call("countdown", {"interval_ms": 1})


def test_lists_hide_nothing_a_call_may_use_and_what_no_call_may(check: PolicyCheck) -> None:
    """Given the rules, then countdown stays listed (some calls are permitted); session_audit is
    listed only to admins; a tenant acme caller sees echo alone."""
    everyone = check.tools()
    assert "countdown" in everyone and "session_audit" not in everyone
    assert "session_audit" in check.tools(groups={"admins"})
    assert check.tools(tenant="acme") == ["echo"]
    assert check.may_call("echo", {"text": "hi"}, tenant="acme")
    assert not check.may_call("countdown", {"steps": 1}, tenant="acme")


def test_a_group_tool_is_for_that_group_and_an_unpermitted_action_is_refused(check: PolicyCheck) -> None:
    """Given no permit for reads or prompts, then they are refused (Cedar denies by default);
    session_audit is callable by an admin only."""
    assert check.may_call("session_audit", {"session": "s"}, groups={"admins", "support"})
    assert not check.may_call("session_audit", {"session": "s"}, groups={"support"})
    assert not check.may_read("session://abc")
    assert not check.may_get("summarize_session")


def test_reads_and_prompts_are_decided_on_their_uri_and_name() -> None:
    rules = {
        "reads.cedar": """
permit(principal, action == Action::"read_resource", resource) when { resource.uri like "session://*" };
permit(principal in Group::"writers", action == Action::"get_prompt", resource == Prompt::"summarize_session");
"""
    }
    check = PolicyCheck(platform_tools, policies=rules)
    assert check.may_read("session://abc/notes") and not check.may_read("other://x")
    assert check.may_get("summarize_session", groups={"writers"}) and not check.may_get("summarize_session")


def test_a_value_cedar_cannot_hold_is_refused_not_rounded() -> None:
    """Given a policy on an integer argument, when a call sends one beyond 64 bits, then it is
    refused with the reason (a rounded or dropped value could slip past a forbid); without a
    policy that reads it, the call is decided without it."""
    check = PolicyCheck(platform_tools, policies=RULES)
    refused = check.decide("call_tool", "countdown", {"steps": 2**70})
    assert not refused.permitted and "outside Cedar's 64-bit integers" in refused.errors[0]
    # Where no policy reads the arguments, the decision does not depend on them: decided once.
    unread = PolicyCheck(platform_tools, policies={"a.cedar": EVERYONE})
    assert unread.may_call("countdown", {"steps": 2**70})


def test_policies_the_catalog_refuses_stop_with_the_policy_named() -> None:
    """A misspelt argument, an unknown tool and a syntax error each raise PolicyError naming the
    policy (its @id, or file#index) or the file."""
    misspelt = (
        '@id("typo")\nforbid(principal, action == Action::"countdown", resource) when { context.arguments.step > 3 };'
    )
    with pytest.raises(PolicyError, match=r"typo: .*arguments\.step"):
        PolicyCheck(platform_tools, policies={"a.cedar": misspelt})
    with pytest.raises(PolicyError, match=r"b.cedar#0: .*unrecognized action"):
        PolicyCheck(
            platform_tools, policies={"b.cedar": 'permit(principal, action == Action::"no_such_tool", resource);'}
        )
    with pytest.raises(PolicyError, match=r"c.cedar"):
        PolicyCheck(platform_tools, policies={"c.cedar": "permit(principal, action, resource) when { ;"})


def test_the_schema_types_each_tools_arguments_from_its_input_schema() -> None:
    schema = CatalogSchema.of(Catalog.discover(platform_tools)).json[""]
    countdown = schema["actions"]["countdown"]
    assert countdown["memberOf"] == [{"id": "call_tool"}]
    arguments = countdown["appliesTo"]["context"]["attributes"]["arguments"]["attributes"]
    assert arguments["steps"] == {"type": "Long", "required": False}  # it has a default
    echo = schema["actions"]["echo"]["appliesTo"]["context"]["attributes"]["arguments"]["attributes"]
    assert echo == {"text": {"type": "String"}}
    notes = schema["actions"]["append_note"]["appliesTo"]["context"]["attributes"]["arguments"]["attributes"]
    assert "session" not in notes  # the handle is the platform's, never in a call's arguments


def test_the_policy_folder_is_read_as_the_endpoint_reads_it(tmp_path: Path) -> None:
    (tmp_path / "all.cedar").write_text(EVERYONE)
    (tmp_path / "notes.txt").write_text("not a policy")
    assert PolicyCheck(platform_tools, policies=tmp_path).may_call("echo", {"text": "x"})


@tool
async def transfer(
    ctx: ToolContext, amount: float, tags: list[str], mode: Literal["fast", "slow"], memo: str | None = None
) -> str:
    return "ok"


def test_numbers_lists_and_optional_arguments_map_to_cedar_types_and_values() -> None:
    catalog = Catalog()
    catalog.add(transfer)
    built = CatalogSchema.of(catalog)
    arguments = built.json[""]["actions"]["transfer"]["appliesTo"]["context"]["attributes"]["arguments"]
    assert arguments["attributes"] == {
        "amount": {"type": "Extension", "name": "decimal"},
        "tags": {"type": "Set", "element": {"type": "String"}},
        "mode": {"type": "String"},
        "memo": {"type": "String", "required": False},
    }
    convert = built.arguments["transfer"]
    assert convert({"amount": 12, "tags": ["a"], "mode": "fast", "memo": None}, "arguments") == {
        "amount": {"__extn": {"fn": "decimal", "arg": "12.0000"}},
        "tags": ["a"],
        "mode": "fast",
    }
    with pytest.raises(Unrepresentable, match="4 decimal places"):
        convert({"amount": 0.12345}, "arguments")
