"""``MCP_AUTH=oauth MCP_OAUTH_FACADE=1 make dev``: the facade in front of the development issuer,
driven by the official SDK client's OAuth support with no pre-registered client (register,
authorize, consent, upstream login, callback, token, tools/call) and a scripted browser."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from local.oauth_browser import ScriptedBrowser
from tests.support.aws import free_port
from tests.support.facade import query_of
from tests.support.local_platform import local_platform

pytestmark = [pytest.mark.integration, pytest.mark.slow]

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


def test_a_client_with_no_registration_signs_in_through_the_local_facade_and_calls_tools(tmp_path: Path) -> None:
    issuer_port = free_port()
    env = {"MCP_AUTH": "oauth", "MCP_OAUTH_FACADE": "1", "MCP_OAUTH_SCOPES": "mcp:tools"}
    env["LOCAL_OAUTH_PORT"] = str(issuer_port)
    with local_platform(tmp_path, env) as platform:
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
        origin = platform.mcp_url.removesuffix("/mcp")
        issuer = f"http://127.0.0.1:{issuer_port}"
        # The person went through the facade's consent page and the development issuer's login page.
        visited = [page.split("?")[0] for page in browser.pages]
        assert visited[:2] == [f"{origin}/authorize", f"{origin}/authorize"]
        assert f"{issuer}/authorize" in visited and visited[-1] == f"{origin}/callback"
        assert storage.client is not None and storage.client.client_id.startswith("mcpc_")  # registered itself
        metadata_document = httpx.get(f"{origin}/.well-known/oauth-authorization-server").json()
        assert metadata_document["issuer"] == origin and metadata_document["client_id_metadata_document_supported"]
