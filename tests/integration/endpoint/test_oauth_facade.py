"""The OAuth facade end to end over HTTP: two endpoint instances on one moto server behind one
round-robin origin (every request to the next instance, as a Function URL spreads them), the
development issuer as the upstream, a scripted browser for the person, raw HTTP and the
official SDK client's OAuth support for the client (SPEC: Authorization for every client)."""

from __future__ import annotations

import json
import secrets
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from local.bootstrap import ROOT
from local.conformance.suite import NODE_BIN
from local.oauth_browser import ScriptedBrowser
from local.oauth_issuer import DEV_USER, LocalIssuer, running_issuer
from tests.support import scoped_tools
from tests.support.aws import client as aws_client
from tests.support.endpoint import AwsStack, fresh_stack
from tests.support.facade import (
    REDIRECT_URI,
    SCOPE,
    Origin,
    Pkce,
    authorize_url,
    facade_env,
    facade_origin,
    facade_secrets,
    query_of,
    redeem,
    register,
    sign_in,
)
from tests.support.mcp_http import CAPS_META, final_message, headers, modern_call

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws", scope="module")
UPSTREAM_SECRET = secrets.token_urlsafe(24)
MACHINE_ID, MACHINE_SECRET = "robot", secrets.token_urlsafe(24)  # a machine client of the upstream issuer


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    from tests.support.facade import UPSTREAM_CLIENT_ID

    with running_issuer(clients={UPSTREAM_CLIENT_ID: UPSTREAM_SECRET, MACHINE_ID: MACHINE_SECRET}) as running:
        yield running


@pytest.fixture(scope="module")
def env(aws: AwsStack, issuer: LocalIssuer) -> dict[str, str]:
    keys_arn, upstream_arn = facade_secrets(aws, UPSTREAM_SECRET)
    return facade_env(issuer, keys_arn, upstream_arn)


@pytest.fixture(scope="module")
def origin(aws: AwsStack, env: dict[str, str]) -> Iterator[Origin]:
    with facade_origin(aws, env, extra_tools=(scoped_tools,)) as running:
        yield running
    for instance in running.instances:  # every MCP message either sent, against the official models
        instance.recorder.validate_all()


def tool_call(url: str, bearer: str, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
    return final_message(modern_call(url, bearer, request_id, "tools/call", params))


def test_a_client_with_no_registration_discovers_registers_signs_in_and_calls_tools(
    origin: Origin, issuer: LocalIssuer
) -> None:
    base = origin.base
    # Given only the MCP URL: the 401 challenge leads to the resource metadata, which names the facade
    refused = httpx.post(origin.mcp, headers=headers(None), json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401
    metadata_url = refused.headers["www-authenticate"].split('resource_metadata="')[1].split('"')[0]
    resource = httpx.get(metadata_url).json()
    assert resource["authorization_servers"] == [base] and resource["resource"] == origin.mcp
    server = httpx.get(f"{base}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == base and server["code_challenge_methods_supported"] == ["S256"]
    assert server["client_id_metadata_document_supported"] is True
    assert server["authorization_response_iss_parameter_supported"] is True
    # When it registers, the person approves and signs in upstream, and it redeems the code
    client = register(base, token_endpoint_auth_method="none", grant_types=["authorization_code", "refresh_token"])
    pkce = Pkce()
    browser = ScriptedBrowser()
    answer = query_of(browser.sign_in(authorize_url(base, client["client_id"], pkce), REDIRECT_URI))
    assert answer["state"] == "state-123" and answer["iss"] == base  # RFC 9207
    assert any(page.startswith(issuer.issuer + "/authorize") for page in browser.pages)  # upstream login page
    tokens = redeem(base, client["client_id"], answer["code"], pkce)
    assert tokens.status_code == 200 and tokens.headers["cache-control"] == "no-store"
    body = tokens.json()
    assert body["token_type"] == "Bearer" and body["scope"] == SCOPE and body["refresh_token"]
    # Then its token calls tools, as the upstream subject: the same principal as a token straight
    # from the upstream issuer for that user (a session opened with one is readable with the other)
    handle = tool_call(origin.mcp, body["access_token"], 1, "open_session", {})["result"]["structuredContent"][
        "session"
    ]
    tool_call(origin.mcp, body["access_token"], 2, "append_note", {"text": "via the facade", "session": handle})
    upstream_token = issuer.mint(DEV_USER, origin.mcp, [SCOPE])
    notes = tool_call(origin.mcp, upstream_token, 3, "read_notes", {"session": handle})
    assert [n["text"] for n in notes["result"]["structuredContent"]["notes"]] == ["via the facade"]
    stranger = issuer.mint("someone-else", origin.mcp, [SCOPE])
    assert tool_call(origin.mcp, stranger, 4, "read_notes", {"session": handle})["error"]["code"] == -31001
    # Every step was spread over both instances.
    assert all(count > 0 for count in origin.proxy.counts), origin.proxy.counts


def test_the_official_sdk_client_signs_in_by_dynamic_registration_and_calls_tools(origin: Origin) -> None:
    class Memory:
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    storage = Memory()
    redirected: list[str] = []

    async def redirect_handler(url: str) -> None:
        # The person at the browser: consent, upstream sign-in; stops at the client's redirect URI.
        redirected.append(await anyio.to_thread.run_sync(ScriptedBrowser().sign_in, url, REDIRECT_URI))

    async def callback_handler() -> AuthorizationCodeResult:
        answer = query_of(redirected[-1])
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    # The SDK's default registration asks for client_secret_post: the facade issues a secret.
    metadata = OAuthClientMetadata(client_name="sdk client", redirect_uris=[REDIRECT_URI])
    provider = OAuthClientProvider(origin.mcp, metadata, storage, redirect_handler, callback_handler)

    async def body() -> None:
        http = httpx2.AsyncClient(auth=provider, timeout=30)
        async with Client(streamable_http_client(origin.mcp, http_client=http), mode="2026-07-28") as client:  # type: ignore[arg-type]
            handle = (await client.call_tool("open_session", {})).structured_content["session"]
            info = await client.call_tool("session_info", {"session": handle})
            assert info.structured_content["session"] == handle
        async with Client(streamable_http_client(origin.mcp, http_client=http), mode="legacy") as legacy:  # type: ignore[arg-type]
            await legacy.call_tool("append_note", {"text": "2025 era"})

    anyio.run(body)
    assert len(redirected) == 1  # one sign-in served both eras
    assert storage.client is not None and storage.client.client_secret  # registered, with a secret
    assert storage.tokens is not None and storage.tokens.refresh_token


class DocumentHost:
    """A client's metadata document on loopback (a local facade may fetch from loopback)."""

    def __init__(self) -> None:
        self.requests = 0
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.requests += 1
                body = json.dumps(
                    {
                        "client_id": host.url,
                        "client_name": "Document Client",
                        "redirect_uris": [REDIRECT_URI],
                        "grant_types": ["authorization_code", "refresh_token"],
                        "token_endpoint_auth_method": "none",
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/oauth/client.json"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()


def test_a_client_id_metadata_document_signs_in_without_registering(origin: Origin) -> None:
    host = DocumentHost()
    try:
        pkce = Pkce()
        browser = ScriptedBrowser()
        consent = browser.client.get(authorize_url(origin.base, host.url, pkce))
        assert consent.status_code == 200 and "Document Client" in consent.text and host.url in consent.text
        answer = query_of(browser.sign_in(authorize_url(origin.base, host.url, pkce), REDIRECT_URI))
        tokens = redeem(origin.base, host.url, answer["code"], pkce)
        assert tokens.status_code == 200, tokens.text
        assert tool_call(origin.mcp, tokens.json()["access_token"], 1, "echo", {"text": "hi"})["result"]
        assert host.requests >= 1
    finally:
        host.server.shutdown()
        host.server.server_close()


def test_the_consent_page_names_the_client_and_where_the_code_goes_and_cannot_be_framed(origin: Origin) -> None:
    client = register(origin.base, client_name="<script>alert(1)</script>", token_endpoint_auth_method="none")
    page = httpx.get(authorize_url(origin.base, client["client_id"], Pkce()))
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "<script>" not in page.text
    assert "127.0.0.1" in page.text and "this computer" in page.text  # a loopback redirect is flagged
    assert (
        page.headers["x-frame-options"] == "DENY"
        and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    )
    cookie = page.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_a_consent_form_posted_from_another_site_is_refused(origin: Origin) -> None:
    client = register(origin.base, token_endpoint_auth_method="none")
    page = httpx.get(authorize_url(origin.base, client["client_id"], Pkce()))
    request_id = page.text.split("name='request' value='")[1].split("'")[0]
    # A cross-site auto-submitting form: no consent cookie (SameSite=Lax), a foreign Origin.
    forged = httpx.post(
        f"{origin.base}/authorize",
        data={"request": request_id, "decision": "approve"},
        headers={"origin": "https://attacker.example"},
    )
    assert forged.status_code == 403 and "location" not in forged.headers
    no_cookie = httpx.post(f"{origin.base}/authorize", data={"request": request_id, "decision": "approve"})
    assert no_cookie.status_code == 403 and "location" not in no_cookie.headers


@dataclass
class Race:
    """Two instances whose redeeming transactions (a code's, a refresh token's) wait for each
    other once ``armed``: both have read the item unused before either writes, so both decide on
    the same state (the race, made certain instead of likely)."""

    origin: Origin
    armed: threading.Event


@pytest.fixture
def race(aws: AwsStack, env: dict[str, str]) -> Iterator[Race]:
    barrier = threading.Barrier(2, timeout=10)
    armed = threading.Event()

    def hold(params: dict[str, Any], **_: Any) -> None:
        keys = [
            action.get("Update", {}).get("Key", {}).get("pk", {}).get("S", "") for action in params["TransactItems"]
        ]
        if armed.is_set() and any(key.startswith(("oauthcode#", "oauthrt#")) for key in keys):
            barrier.wait()

    clients = []
    for _ in range(2):
        client = aws_client("dynamodb", aws.endpoint_url)
        client.meta.events.register("before-parameter-build.dynamodb.TransactWriteItems", hold)
        clients.append(client)
    with facade_origin(aws, env, clients=clients) as running:
        yield Race(running, armed)


def both_instances(origin: Origin, form: dict[str, str]) -> list[httpx.Response]:
    """The same token request to each instance at once (distinct processes' worth of state)."""
    bases = [instance.url.removesuffix("/mcp") for instance in origin.instances]
    # Each instance answers to its own Host; the code is bound to the origin's issuer, so the
    # requests carry the origin's Host, as the Function URL would.
    host = origin.base.removeprefix("http://")
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(httpx.post, f"{base}/token", data=form, headers={"host": host}) for base in bases]
        return [future.result() for future in futures]


def test_one_code_redeemed_on_two_instances_at_once_yields_one_token(race: Race) -> None:
    origin = race.origin
    # Given a code of a client without refresh tokens (so only the code's one-time mark decides)
    client = register(origin.base, token_endpoint_auth_method="none", grant_types=["authorization_code"])
    pkce = Pkce()
    code = sign_in(origin.base, client["client_id"], pkce)["code"]
    form = {
        "grant_type": "authorization_code",
        "client_id": client["client_id"],
        "code": code,
        "code_verifier": pkce.verifier,
        "redirect_uri": REDIRECT_URI,
    }
    # When both instances redeem it concurrently, both having read it unused
    race.armed.set()
    responses = both_instances(origin, form)
    # Then exactly one gets tokens; the other is told the code was used
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200, 400], [r.text for r in responses]
    loser = next(response for response in responses if response.status_code == 400)
    assert loser.json()["error"] == "invalid_grant"


def test_one_refresh_token_used_on_two_instances_at_once_ends_the_sign_in(
    race: Race,
) -> None:
    origin = race.origin
    client = register(
        origin.base, token_endpoint_auth_method="none", grant_types=["authorization_code", "refresh_token"]
    )
    pkce = Pkce()
    code = sign_in(origin.base, client["client_id"], pkce)["code"]
    first = redeem(origin.base, client["client_id"], code, pkce).json()
    form = {"grant_type": "refresh_token", "client_id": client["client_id"], "refresh_token": first["refresh_token"]}
    race.armed.set()
    responses = both_instances(origin, form)
    race.armed.clear()
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200, 400], [r.text for r in responses]
    # The reuse revoked the grant: the winner's new refresh token is dead as well.
    winner = next(response for response in responses if response.status_code == 200).json()
    again = httpx.post(
        f"{origin.base}/token",
        data={
            "grant_type": "refresh_token",
            "client_id": client["client_id"],
            "refresh_token": winner["refresh_token"],
        },
    )
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_public_endpoints_are_readable_from_any_browser_origin(origin: Origin) -> None:
    for path in ("/.well-known/oauth-authorization-server", "/jwks"):
        response = httpx.get(origin.base + path, headers={"origin": "http://localhost:6274"})
        assert response.status_code == 200 and response.headers["access-control-allow-origin"] == "*"
    preflight = httpx.options(f"{origin.base}/token", headers={"origin": "http://localhost:6274"})
    assert preflight.status_code == 204 and "POST" in preflight.headers["access-control-allow-methods"]
    keys = httpx.get(origin.base + "/jwks").json()["keys"]
    assert keys and all(key["alg"] == "ES256" and "d" not in key for key in keys)


BAD_REQUESTS: list[tuple[str, str, dict[str, Any], int]] = [
    ("POST", "/register", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 400),
    ("POST", "/register", {"json": [1, 2]}, 400),
    ("POST", "/register", {"data": {"redirect_uris": "x"}}, 400),  # wrong content type
    ("POST", "/register", {"json": {"redirect_uris": ["https://x.example/" + "a" * 20_000]}}, 413),
    ("GET", "/register", {}, 405),
    ("POST", "/token", {"json": {"grant_type": "authorization_code"}}, 400),
    ("POST", "/token", {"data": {"grant_type": "authorization_code"}, "headers": {"authorization": "Basic %%%"}}, 400),
    (
        "POST",
        "/token",
        {"content": b"grant_type=a&grant_type=b", "headers": {"content-type": "application/x-www-form-urlencoded"}},
        400,
    ),
    (
        "POST",
        "/token",
        {"content": b"a=" + b"%ff" * 10, "headers": {"content-type": "application/x-www-form-urlencoded"}},
        400,
    ),
    (
        "POST",
        "/token",
        {
            "content": b"&".join(b"a%d=1" % i for i in range(100)),
            "headers": {"content-type": "application/x-www-form-urlencoded"},
        },
        400,
    ),
    (
        "POST",
        "/token",
        {"data": {"grant_type": "refresh_token", "client_id": "https://c.example/x", "refresh_token": "x"}},
        400,
    ),
    ("GET", "/token", {}, 405),
    ("GET", "/authorize", {}, 400),
    ("GET", "/authorize", {"params": {"client_id": "mcpc_" + "a" * 32}}, 400),
    ("GET", "/authorize", {"params": {"client_id": "https://127.0.0.1:1/none.json"}}, 400),
    ("GET", "/authorize", {"params": {"client_id": "\x00\r\n"}}, 400),
    ("GET", "/authorize", {"params": {"client_id": f"https://{'a' * 64}.example/client.json"}}, 400),
    ("GET", "/authorize", {"params": {"client_id": "https://client..example/client.json"}}, 400),
    ("GET", "/authorize", {"params": {"client_id": "https://.example/client.json"}}, 400),
    ("POST", "/authorize", {"data": {"request": "x", "decision": "approve"}}, 400),
    ("POST", "/authorize", {"data": {"request": "a" * 32, "decision": "approve"}}, 400),
    ("GET", "/callback", {}, 400),
    ("GET", "/callback", {"params": {"state": "a\r\nSet-Cookie: x=y", "code": "c"}}, 400),
    ("GET", "/callback", {"params": {"state": "a" * 32, "code": "c"}}, 400),
    ("DELETE", "/jwks", {}, 405),
]


@pytest.mark.parametrize(("method", "path", "options", "status"), BAD_REQUESTS)
def test_bad_input_gets_an_oauth_error_never_a_5xx(
    origin: Origin, method: str, path: str, options: dict[str, Any], status: int
) -> None:
    response = httpx.request(method, origin.base + path, **options)
    assert response.status_code == status, response.text
    if response.headers["content-type"].startswith("application/json"):
        assert response.json()["error"] and response.json()["error_description"]
    else:
        assert response.headers["content-type"].startswith("text/html") and "set-cookie" not in response.headers


@pytest.mark.parametrize(
    "presented",
    [
        REDIRECT_URI + "\n",
        REDIRECT_URI.replace("/callback", "/call\rback"),
        REDIRECT_URI.replace("/callback", "/call\tback"),
        "\x00" + REDIRECT_URI,
        REDIRECT_URI.replace("127.0.0.1:", "[127.0.0.1:"),
        REDIRECT_URI.replace("127.0.0.1:", "127.0.0.1\uff1a"),
        REDIRECT_URI.replace("127.0.0.1", "\uff11\uff12\uff17.\uff10.\uff10.\uff11"),
        REDIRECT_URI.replace("127.0.0.1", "evil.example\uff20127.0.0.1"),
    ],
    ids=[
        "LF",
        "CR",
        "TAB",
        "leading NUL",
        "unclosed IPv6 literal",
        "fullwidth colon",
        "fullwidth host",
        "fullwidth at",
    ],
)
def test_a_redirect_uri_not_registered_character_for_character_is_an_error_page_never_a_redirect(
    origin: Origin, presented: str
) -> None:
    # Given a native client registered with its loopback redirect URI
    client = register(origin.base, token_endpoint_auth_method="none")
    for params in ({}, {"response_type": "token"}):  # a consent page, or an error for the redirect URI
        # When the browser brings an authorization request naming a look-alike of it
        response = httpx.get(authorize_url(origin.base, client["client_id"], Pkce(), redirect_uri=presented, **params))
        # Then the person sees the error page: no redirect, no consent, no failure
        assert response.status_code == 400, response.text
        assert response.headers["content-type"].startswith("text/html") and "location" not in response.headers
        assert "not registered for this client" in response.text


@pytest.mark.parametrize(
    "address",
    ["64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b:1::a00:1", "::a9fe:a9fe"],
)
def test_a_client_id_document_on_an_address_that_embeds_a_private_ipv4_one_is_never_fetched(
    origin: Origin, address: str
) -> None:
    # Given a client_id URL whose host is a NAT64 (or IPv4-compatible) address embedding
    # 169.254.169.254, 127.0.0.1 or 10.0.0.1
    client_id = f"https://[{address}]/client.json"
    # When the browser brings an authorization request for it
    response = httpx.get(authorize_url(origin.base, client_id, Pkce()))
    # Then the facade refuses the address as it refuses the IPv4 address itself: no connection is tried
    assert response.status_code == 400 and "location" not in response.headers
    assert "non-public address" in response.text, response.text


def test_an_unknown_host_has_no_authorization_server(origin: Origin) -> None:
    response = httpx.get(f"{origin.base}/.well-known/oauth-authorization-server", headers={"host": "evil.example"})
    assert response.status_code == 421


def test_a_token_issued_for_one_host_name_is_not_accepted_under_another(origin: Origin) -> None:
    client = register(origin.base, token_endpoint_auth_method="none")
    pkce = Pkce()
    code = sign_in(origin.base, client["client_id"], pkce)["code"]
    access = redeem(origin.base, client["client_id"], code, pkce).json()["access_token"]
    other = origin.mcp.replace("127.0.0.1", "localhost")  # another resource (and another issuer)
    params = {"name": "echo", "arguments": {"text": "x"}, "_meta": CAPS_META}
    assert modern_call(other, access, 1, "tools/call", params).status_code == 401


def discover(url: str, bearer: str) -> dict[str, Any]:
    result = final_message(modern_call(url, bearer, 1, "server/discover", {"_meta": CAPS_META}))["result"]
    capabilities: dict[str, Any] = result["capabilities"]
    return capabilities


def test_with_client_credentials_on_a_machine_signs_in_at_the_facade_and_the_extension_is_advertised(
    aws: AwsStack, env: dict[str, str], issuer: LocalIssuer, origin: Origin
) -> None:
    extension = "io.modelcontextprotocol/oauth-client-credentials"
    with facade_origin(aws, {**env, "MCP_OAUTH_CLIENT_CREDENTIALS": "true"}) as machines:
        # Given a machine client of the upstream issuer that discovers the facade from the resource
        server = httpx.get(f"{machines.base}/.well-known/oauth-authorization-server").json()
        assert "client_credentials" in server["grant_types_supported"]
        # When it asks the facade's token endpoint with its own credentials (client_secret_basic)
        answer = httpx.post(
            server["token_endpoint"],
            data={"grant_type": "client_credentials", "scope": SCOPE, "resource": machines.mcp},
            auth=(MACHINE_ID, MACHINE_SECRET),
        )
        assert answer.status_code == 200, answer.text
        token = answer.json()["access_token"]
        # Then the token calls tools, and server/discover names the extension (2026 only)
        assert (
            tool_call(machines.mcp, token, 1, "echo", {"text": "machine"})["result"]["content"][0]["text"] == "machine"
        )
        assert extension in discover(machines.mcp, token)["extensions"]
        wrong = httpx.post(
            server["token_endpoint"], data={"grant_type": "client_credentials"}, auth=(MACHINE_ID, "not-the-secret")
        )
        assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    # Without the option: neither advertised nor served.
    client = register(origin.base, token_endpoint_auth_method="none")
    pkce = Pkce()
    token = redeem(origin.base, client["client_id"], sign_in(origin.base, client["client_id"], pkce)["code"], pkce)
    assert extension not in discover(origin.mcp, token.json()["access_token"]).get("extensions", {})
    refused = httpx.post(
        f"{origin.base}/token", data={"grant_type": "client_credentials"}, auth=(MACHINE_ID, MACHINE_SECRET)
    )
    assert refused.status_code == 400 and refused.json()["error"] == "unsupported_grant_type"


TS_CLIENT = ROOT / "local" / "clients" / "ts_oauth_client.mjs"


def test_the_typescript_sdk_client_the_inspector_runs_signs_in_with_no_registration(origin: Origin) -> None:
    node = NODE_BIN / "node"
    if not node.is_file() or not (ROOT / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.skip("needs Node 22 and @modelcontextprotocol/sdk from `npm ci`")
    # Given the SDK's own auth module (the MCP Inspector's web UI runs it) and a person at a browser
    process = subprocess.Popen(
        [str(node), str(TS_CLIENT), "--url", origin.mcp, "--redirect", REDIRECT_URI],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        # When it asks for authorization, the browser approves and signs in, and it gets the redirect
        line = process.stdout.readline()
        assert line.startswith("AUTHORIZE "), line + (process.stderr.read() if process.stderr else "")
        landed = ScriptedBrowser().sign_in(line.removeprefix("AUTHORIZE ").strip(), REDIRECT_URI)
        process.stdin.write(landed + "\n")
        process.stdin.flush()
        output, errors = process.communicate(timeout=60)
    finally:
        process.kill()
    # Then it registered itself, holds a token for this resource and calls tools
    results = [line for line in output.splitlines() if line.startswith("RESULT ")]
    assert process.returncode == 0 and results, errors
    result = json.loads(results[0].removeprefix("RESULT "))
    assert result["clientId"].startswith("mcpc_") and result["echo"] == "typescript" and "echo" in result["tools"]
