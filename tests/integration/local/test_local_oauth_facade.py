"""``MCP_AUTH=oauth MCP_OAUTH_FACADE=1 make dev``: the facade in front of the development issuer,
signed in to by clients nobody registered (register, authorize, consent, upstream login,
callback, token, tools/call), on one platform:

- the official Python SDK client's OAuth support, with a scripted browser;
- the MCP Inspector's web UI (pinned in package.json, started as ``npx @modelcontextprotocol/inspector``
  starts it) in a headless Chromium (``local/clients/inspector_oauth.mjs``) doing what a person
  does: Streamable HTTP, the endpoint's URL, Connect, Allow on the facade's consent page, Sign in
  on the development issuer's login page, then Tools, List Tools, echo, Run Tool. Screenshots of
  each step are left in the test's temporary directory (``make inspector-demo`` keeps them under
  build/inspector-demo). Not skipped when something is missing: ``make test`` installs Chromium
  first (``make browser``).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from local.conformance.suite import NODE_BIN
from local.oauth_browser import ScriptedBrowser
from tests.support.aws import free_port
from tests.support.facade import query_of
from tests.support.inspector import BROWSER_DRIVER, chromium_path, inspector_web_ui
from tests.support.local_platform import ROOT, LocalPlatform, local_platform

# One worker, so the module's platform starts once for both clients (pytest-xdist 3.8 on pytest 9.2
# ignores groups, pytest-dev/pytest-xdist#1386: until that is fixed each worker may start one).
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_oauth_facade")]
BROWSER_DEADLINE_S = 120

REDIRECT_URI = "http://127.0.0.1:33420/callback"


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


@dataclass(frozen=True)
class Facade:
    platform: LocalPlatform
    issuer: str
    """The development issuer's origin (its login page is ``/authorize`` there)."""

    @property
    def origin(self) -> str:
        return self.platform.mcp_url.removesuffix("/mcp")


@pytest.fixture(scope="module")
def facade(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    issuer_port = free_port()
    env = {"MCP_AUTH": "oauth", "MCP_OAUTH_FACADE": "1", "MCP_OAUTH_SCOPES": "mcp:tools"}
    env["LOCAL_OAUTH_PORT"] = str(issuer_port)
    with local_platform(tmp_path_factory.mktemp("local-oauth-facade"), env) as platform:
        yield Facade(platform=platform, issuer=f"http://127.0.0.1:{issuer_port}")


def test_a_client_with_no_registration_signs_in_through_the_local_facade_and_calls_tools(facade: Facade) -> None:
    platform, origin, issuer = facade.platform, facade.origin, facade.issuer
    browser = ScriptedBrowser()
    landed: list[str] = []

    async def redirect_handler(url: str) -> None:
        landed.append(await anyio.to_thread.run_sync(browser.sign_in, url, REDIRECT_URI))

    async def callback_handler() -> AuthorizationCodeResult:
        answer = query_of(landed[-1])
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    storage = Memory()
    metadata = OAuthClientMetadata(client_name="local sdk", redirect_uris=[REDIRECT_URI])
    provider = OAuthClientProvider(platform.mcp_url, metadata, storage, redirect_handler, callback_handler)

    async def body() -> str:
        http = httpx2.AsyncClient(auth=provider, timeout=30)
        async with Client(streamable_http_client(platform.mcp_url, http_client=http), mode="2026-07-28") as client:  # type: ignore[arg-type]
            result = await client.call_tool("echo", {"text": "through the facade"})
            return str(result.content[0].text)  # type: ignore[union-attr]

    assert anyio.run(body) == "through the facade"
    # The person went through the facade's consent page and the development issuer's login page.
    visited = [page.split("?")[0] for page in browser.pages]
    assert visited[:2] == [f"{origin}/authorize", f"{origin}/authorize"]
    assert f"{issuer}/authorize" in visited and visited[-1] == f"{origin}/callback"
    assert storage.client is not None and storage.client.client_id.startswith("mcpc_")  # registered itself
    metadata_document = httpx.get(f"{origin}/.well-known/oauth-authorization-server").json()
    assert metadata_document["issuer"] == origin and metadata_document["client_id_metadata_document_supported"]


def test_the_mcp_inspector_signs_in_with_no_registration_and_calls_echo(facade: Facade, tmp_path: Path) -> None:
    chromium = chromium_path()
    text = f"hello from the MCP Inspector {uuid.uuid4().hex[:8]}"
    screenshots = tmp_path / "screenshots"
    # Given the platform serving the facade and the Inspector, which no one has registered anywhere
    with inspector_web_ui(tmp_path) as inspector:
        # When a person connects the Inspector to the endpoint, allows it, signs in and calls echo
        completed = subprocess.run(
            [
                str(NODE_BIN / "node"),
                str(BROWSER_DRIVER),
                *("--inspector", inspector.url, "--url", facade.platform.mcp_url, "--chromium", str(chromium)),
                *("--text", text, "--screenshots", str(screenshots)),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=BROWSER_DEADLINE_S,
            check=False,
        )
        results = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
        assert completed.returncode == 0 and results, (
            f"{completed.stderr}\nscreenshots: {screenshots}\n{inspector.log_path.read_text()[-3000:]}"
        )
    outcome = json.loads(results[0].removeprefix("RESULT "))
    origin = facade.origin
    ui = inspector.url.split("/?", 1)[0]
    # Then the Inspector registered itself (the facade's client ids; a metadata document's is a URL)
    assert outcome["clientId"].startswith("mcpc_")
    # and the person saw the consent page naming it, then the issuer's login page, in this order
    assert outcome["consent"] == "Allow MCP Inspector to use this MCP server?"
    loaded = outcome["navigations"]  # a page and the form it posts share a URL
    pages = [page for index, page in enumerate(loaded) if index == 0 or loaded[index - 1] != page]
    assert pages == [
        f"{ui}/",
        f"{origin}/authorize",  # the consent page, then its form
        f"{facade.issuer}/authorize",  # the login page, then its form
        f"{origin}/callback",
        f"{ui}/oauth/callback",
    ]
    # and, connected with the token it got, it listed the tools and echo answered
    assert [entry.split(". ", 1)[1] for entry in outcome["history"]][:2] == ["tools/call", "tools/list"]
    assert outcome["result"].startswith("Tool Result: Success")
    assert f'"{text}"' in outcome["result"]
    # and the browser reached nothing beyond loopback
    assert outcome["blocked"] == []
