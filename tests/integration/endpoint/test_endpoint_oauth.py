"""OAuth 2.1 resource-server mode end to end: a loopback issuer, two endpoint instances, raw HTTP
in both protocol eras and the official SDK client with a bearer token."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from local.oauth_issuer import LocalIssuer, running_issuer
from tests.support import scoped_tools
from tests.support.aws import free_port
from tests.support.endpoint import AwsStack, Instance, endpoint_instance, sdk_client
from tests.support.mcp_http import CAPS_META, call, final_message, headers, initialize, modern_call

pytestmark = pytest.mark.integration

SHARED = "https://mcp.example.test/mcp"  # one resource behind both instances, as behind one domain
METADATA = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"
ORIGIN = "http://localhost:6274"


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    with running_issuer() as running:
        yield running


def oauth_env(issuer: LocalIssuer, **more: str) -> dict[str, str]:
    return {"MCP_AUTH": "oauth", "MCP_OAUTH_ISSUER": issuer.issuer, "MCP_OAUTH_SCOPES": "mcp:tools", **more}


@pytest.fixture(scope="module")
def pair(aws: AwsStack, issuer: LocalIssuer) -> Iterator[tuple[Instance, Instance]]:
    env = oauth_env(issuer, MCP_OAUTH_AUDIENCE=SHARED, MCP_ALLOWED_ORIGINS=ORIGIN)
    with (
        endpoint_instance(aws, extra_tools=(scoped_tools,), **env) as a,
        endpoint_instance(aws, extra_tools=(scoped_tools,), **env) as b,
    ):
        yield a, b
    # Every message either instance sent, checked against the official models (xdist may
    # split the module, so one instance alone may have served nothing).
    assert a.recorder.validate_all() + b.recorder.validate_all() > 0


@pytest.fixture(scope="module")
def token(issuer: LocalIssuer) -> Callable[..., str]:
    def mint(subject: str = "alice", scopes: tuple[str, ...] = ("mcp:tools",), **options: Any) -> str:
        return issuer.mint(subject, options.pop("audience", SHARED), scopes, **options)

    return mint


def test_metadata_is_public_and_names_the_issuer_and_every_scope(pair: tuple[Instance, Instance]) -> None:
    a, _ = pair
    base = a.url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = httpx.get(base + path, headers={"Origin": "https://any-browser-client.example"})
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == "*"
        document = response.json()
        assert document["resource"] == SHARED
        assert document["authorization_servers"] == [a.endpoint.authenticator.settings.issuer]
        assert document["scopes_supported"] == ["mcp:tools", "notes:admin"]
        assert document["bearer_methods_supported"] == ["header"]


def test_no_token_is_401_with_a_browser_readable_discovery_challenge(pair: tuple[Instance, Instance]) -> None:
    a, _ = pair
    response = httpx.post(a.url, headers={**headers(None), "Origin": ORIGIN}, json={"jsonrpc": "2.0", "id": 1})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == f'Bearer resource_metadata="{METADATA}", scope="mcp:tools"'
    assert "www-authenticate" in response.headers["access-control-expose-headers"]


@pytest.mark.parametrize(
    "bad",
    [
        {"expires_in": -300},
        {"audience": "http://127.0.0.1:8000/mcp"},
        {"issuer": "https://other-issuer.example"},
    ],
    ids=["expired", "other audience", "other issuer"],
)
def test_invalid_tokens_are_401_invalid_token(
    pair: tuple[Instance, Instance], token: Callable[..., str], bad: dict[str, Any]
) -> None:
    a, _ = pair
    response = httpx.post(a.url, headers=headers(token(**bad)), json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert f'resource_metadata="{METADATA}"' in response.headers["www-authenticate"]


def test_2025_session_created_on_one_instance_serves_its_subject_on_the_other(
    pair: tuple[Instance, Instance], token: Callable[..., str]
) -> None:
    a, b = pair
    alice, bob = token("alice"), token("bob")
    session_id = initialize(a.url, alice)
    params = {"name": "append_note", "arguments": {"text": "from A"}}
    assert "result" in final_message(call(a.url, alice, session_id, 2, "tools/call", params))
    notes = final_message(call(b.url, alice, session_id, 3, "tools/call", {"name": "read_notes"}))
    assert [n["text"] for n in notes["result"]["structuredContent"]["notes"]] == ["from A"]
    # Another subject of the same issuer: the session does not exist for it, on either instance.
    assert call(b.url, bob, session_id, 4, "tools/call", {"name": "read_notes"}).status_code == 404
    assert call(a.url, bob, session_id, 5, "ping").status_code == 404
    deleted = httpx.delete(b.url, headers=headers(bob, **{"Mcp-Session-Id": session_id}))
    assert deleted.status_code == 404


def test_2026_session_handle_works_across_instances_for_its_subject_only(
    pair: tuple[Instance, Instance], token: Callable[..., str]
) -> None:
    a, b = pair
    alice, bob = token("alice"), token("bob")

    def tool_call(url: str, bearer: str, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
        return final_message(modern_call(url, bearer, request_id, "tools/call", params))

    handle = tool_call(a.url, alice, 1, "open_session", {})["result"]["structuredContent"]["session"]
    tool_call(a.url, alice, 2, "append_note", {"text": "stateless", "session": handle})
    notes = tool_call(b.url, alice, 3, "read_notes", {"session": handle})
    assert [n["text"] for n in notes["result"]["structuredContent"]["notes"]] == ["stateless"]
    foreign = tool_call(b.url, bob, 4, "read_notes", {"session": handle})
    assert foreign["error"]["code"] == -31001  # session not found: it is alice's


def test_tool_scope_missing_is_403_insufficient_scope_and_granted_scope_works(
    pair: tuple[Instance, Instance], token: Callable[..., str]
) -> None:
    a, _ = pair
    params = {"name": "admin_echo", "arguments": {"text": "hi"}, "_meta": CAPS_META}
    refused = modern_call(a.url, token("alice"), 1, "tools/call", params)
    assert refused.status_code == 403 and refused.json()["id"] == 1
    assert refused.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA}", scope="mcp:tools notes:admin", '
        'error="insufficient_scope", error_description="The tool needs more scope"'
    )
    granted = modern_call(a.url, token("alice", ("mcp:tools", "notes:admin")), 2, "tools/call", params)
    assert final_message(granted)["result"]["content"][0]["text"] == "hi"


def test_token_without_the_scope_every_request_needs_is_403(
    pair: tuple[Instance, Instance], token: Callable[..., str]
) -> None:
    a, _ = pair
    response = httpx.post(a.url, headers=headers(token(scopes=())), json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]


def test_keys_and_tokens_together_for_migration(
    aws: AwsStack, issuer: LocalIssuer, api_key: str, token: Callable[..., str]
) -> None:
    with endpoint_instance(aws, **oauth_env(issuer, MCP_AUTH="api_key,oauth", MCP_OAUTH_AUDIENCE=SHARED)) as both:
        assert initialize(both.url, api_key)  # a platform key (principal alice)
        assert initialize(both.url, token("alice"))  # a JWT (principal oauth:<issuer>#alice)
        key_session = initialize(both.url, api_key)
        # Same subject name, other credential: not the same principal.
        assert call(both.url, token("alice"), key_session, 2, "ping").status_code == 404
        anonymous = httpx.post(both.url, headers=headers(None), json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert anonymous.status_code == 401 and "resource_metadata" in anonymous.headers["www-authenticate"]


def test_official_sdk_client_connects_with_a_bearer_token_in_both_eras(aws: AwsStack, issuer: LocalIssuer) -> None:
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"  # no MCP_OAUTH_AUDIENCE: derived from the loopback Host
    bearer = issuer.mint("sdk-user", audience, ["mcp:tools"])

    async def body(url: str) -> None:
        async with sdk_client(url, bearer, "legacy") as legacy:
            await legacy.call_tool("append_note", {"text": "via sdk"})
            notes = await legacy.call_tool("read_notes", {})
            assert [n["text"] for n in notes.structured_content["notes"]] == ["via sdk"]
        async with sdk_client(url, bearer, "2026-07-28") as modern:
            handle = (await modern.call_tool("open_session", {})).structured_content["session"]
            info = await modern.call_tool("session_info", {"session": handle})
            assert info.structured_content["session"] == handle

    with endpoint_instance(aws, port=port, **oauth_env(issuer)) as running:
        anyio.run(body, running.url)
        assert running.recorder.validate_all() > 0
