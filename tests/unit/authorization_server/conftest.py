"""The facade's steps on a moto table, with a stand-in upstream issuer and fixed signing seeds."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from moto import mock_aws

from mcp_platform.adapters.dynamodb.facade_store import FacadeStore
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.sessions import ManualClock
from mcp_platform.application.interactive.keys import StaticKeyRing
from mcp_platform.authorization_server.documents import ClientDocuments
from mcp_platform.authorization_server.errors import InvalidClient
from mcp_platform.authorization_server.ports import DocumentRefused, FetchedDocument, UpstreamUser
from mcp_platform.authorization_server.service import AuthorizationServer, Consent, Site
from mcp_platform.authorization_server.signing import SigningKeys
from mcp_platform.config import FacadeSettings
from tests.support.facade import Pkce
from tests.support.tables import create_session_table

SITE = Site(
    issuer="https://mcp.example.test",
    resource="https://mcp.example.test/mcp",
    scopes_supported=("mcp:tools", "notes:admin"),
    required_scopes=("mcp:tools",),
)
REDIRECT = "https://client.example/callback"
SEED = b"s" * 48


@dataclass
class FakeUpstream:
    """The upstream issuer: a sign-in always succeeds as ``subject`` unless told otherwise; its
    ID token's (and a machine client's access token's) other claims are ``claims``."""

    subject_of: str = "alice"
    claims: dict[str, Any] = field(default_factory=dict)
    refuse: Exception | None = None
    redemptions: list[tuple[str, str, str]] = field(default_factory=list)

    def authorization_url(self, redirect_uri: str, state: str, code_challenge: str) -> str:
        return f"https://upstream.example/authorize?state={state}&redirect_uri={redirect_uri}"

    def client_credentials(
        self, client_id: str, client_secret: str, scope: str | None
    ) -> tuple[UpstreamUser, tuple[str, ...]]:
        if client_secret != "machine-secret":
            raise InvalidClient("the issuer refused the client's credentials")
        return UpstreamUser(f"machine-{client_id}", self.claims), ("mcp:tools", "not-ours")

    def user(self, code: str, redirect_uri: str, code_verifier: str) -> UpstreamUser:
        self.redemptions.append((code, redirect_uri, code_verifier))
        if self.refuse is not None:
            raise self.refuse
        return UpstreamUser(self.subject_of, self.claims)


@dataclass
class Documents:
    """Client metadata documents served by URL (no network)."""

    bodies: dict[str, bytes] = field(default_factory=dict)
    fetches: int = 0

    def fetch(self, url: str) -> FetchedDocument:
        self.fetches += 1
        if url not in self.bodies:
            raise DocumentRefused("not served")
        return FetchedDocument(self.bodies[url])


@dataclass
class Facade:
    server: AuthorizationServer
    clock: ManualClock
    upstream: FakeUpstream
    documents: Documents
    store: FacadeStore

    def query(self, client_id: str, pkce: Pkce, **params: str) -> dict[str, str]:
        return {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": pkce.challenge,
            "code_challenge_method": "S256",
            "state": "st",
            "scope": "mcp:tools",
            "resource": SITE.resource,
            **params,
        }

    def consent(self, client_id: str, pkce: Pkce, **params: str) -> Consent:
        outcome = self.server.begin(SITE, self.query(client_id, pkce, **params), frozenset())
        assert isinstance(outcome, Consent), outcome
        return outcome

    def code(self, client_id: str, pkce: Pkce, **params: str) -> str:
        """A whole sign-in: consent, approve, the upstream's callback; our code."""
        consent = self.consent(client_id, pkce, **params)
        self.server.decide(SITE, consent.pending.request_id, consent.browser_secret, True)
        back = self.server.complete(SITE, {"state": consent.pending.request_id, "code": "up"}, consent.browser_secret)
        return query_of(back.url)["code"]

    def redeem(self, client_id: str, code: str, pkce: Pkce, **more: str) -> dict[str, Any]:
        form = {
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": code,
            "code_verifier": pkce.verifier,
            "redirect_uri": REDIRECT,
            **more,
        }
        return self.server.token(SITE, form, frozenset(), None)

    def refresh(self, client_id: str, token: str, **more: str) -> dict[str, Any]:
        form = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": token, **more}
        return self.server.token(SITE, form, frozenset(), None)

    def public_client(self, **metadata: Any) -> str:
        body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata}
        body.setdefault("grant_types", ["authorization_code", "refresh_token"])
        return str(self.server.register(body)["client_id"])


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


@pytest.fixture
def machines() -> bool:
    """The client-credentials extension on (a test overrides it)."""
    return False


@pytest.fixture
def tenant_claim() -> str:
    """The deployment's tenant claim; empty: no tenants (a test overrides it)."""
    return ""


@pytest.fixture
def facade(aws_env: None, machines: bool, tenant_claim: str) -> Iterator[Facade]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        table = f"sessions-{uuid.uuid4().hex[:8]}"
        create_session_table(client, table)
        clock = ManualClock(1_800_000_000.0)
        store = FacadeStore(table, DynamoGateway(client), clock)
        upstream = FakeUpstream()
        documents = Documents()
        keys = SigningKeys(StaticKeyRing("k1", {"k1": SEED}))
        settings = FacadeSettings(keys_secret="unused", upstream_client_secret="unused")
        server = AuthorizationServer(
            store,
            ClientDocuments(documents),
            upstream,
            keys,
            settings,
            clock,
            machines=machines,
            tenant_claim=tenant_claim,
        )
        yield Facade(server, clock, upstream, documents, store)
