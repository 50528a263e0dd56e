"""The authorization server's steps, without HTTP: metadata, registration, the authorization
request and its consent, the upstream callback, and the token endpoint's two grants.

A sign-in, as the client and the browser see it::

    client  POST /register                     -> client_id (RFC 7591), or a metadata-document URL
    browser GET  /authorize?client_id&redirect_uri&code_challenge(S256)&state&scope&resource
            -> consent page naming the client and where the code goes (+ a consent cookie)
    browser POST /authorize  decision=approve   -> 302 to the upstream issuer's sign-in (PKCE)
    browser GET  /callback?code&state           (upstream) -> facade redeems the upstream code,
            -> 302 redirect_uri?code&state&iss  (RFC 9207)
    client  POST /token  grant_type=authorization_code&code&code_verifier&redirect_uri[&resource]
            -> access token (aud = the resource, RFC 8707) + refresh token (rotated on each use)

Until the client and its redirect URI are known to belong together, errors are shown to the
user (never redirected: RFC 6749 section 4.1.2.1); after that they go back to the client as
``error``/``error_description``/``state``/``iss``. Every step may run on another instance: all
state is in an :class:`.ports.AuthorizationStore`. Methods here block (table, secrets, upstream): the HTTP
layer runs them off the event loop.

With tenants (``tenant_claim``: the deployment's ``MCP_OAUTH_TENANT_CLAIM``) the user's tenant is
the upstream's claim of that name (the ID token's; a machine client's access token's): a sign-in
without a valid one is refused, and the tenant stays with the code and the refresh grant, so
every access token of the sign-in carries it under the same claim name.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import math
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from mcp_platform.application.auth.tenants import TENANT_SYNTAX, is_tenant, require_tenant
from mcp_platform.authorization_server import AUTHORIZE_PATH, CALLBACK_PATH, JWKS_PATH, REGISTER_PATH, TOKEN_PATH
from mcp_platform.authorization_server.clients import (
    AUTH_METHODS,
    GRANT_TYPES,
    ClientRecord,
    is_registered_client_id,
    register,
    registration_response,
)
from mcp_platform.authorization_server.documents import ClientDocuments
from mcp_platform.authorization_server.errors import (
    FacadeUnavailable,
    InvalidClient,
    OAuthError,
    UpstreamUnavailable,
)
from mcp_platform.authorization_server.ports import (
    AuthorizationStore,
    CodeGrant,
    PendingAuthorization,
    Redemption,
    RefreshGrant,
    UpstreamIdentityProvider,
    UpstreamUser,
    digest,
)
from mcp_platform.authorization_server.signing import SigningKeys
from mcp_platform.authorization_server.tokens import mint_access_token
from mcp_platform.authorization_server.urls import is_document_client_id, redirect_uri_matches
from mcp_platform.config import FacadeSettings
from mcp_platform.protocol.clock import Clock

logger = logging.getLogger(__name__)

REQUEST_SECONDS = 600  # consent + upstream sign-in (a password, an MFA code) must fit
CODE_SECONDS = 60  # OAuth 2.1 section 4.1.2: short-lived
MAX_STATE_CHARS = 1024
REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)
_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")  # base64url of a SHA-256, unpadded
_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")  # RFC 7636 section 4.1


@dataclass(frozen=True)
class Site:
    """This origin as an authorization server: derived from the request's Host like the resource."""

    issuer: str
    resource: str
    scopes_supported: tuple[str, ...]
    required_scopes: tuple[str, ...]

    def url(self, path: str) -> str:
        return self.issuer + path


class PageError(Exception):
    """Shown to the user: the request cannot be sent back to a client that is known to own it."""

    def __init__(self, title: str, detail: str, status: int = 400) -> None:
        super().__init__(detail)
        self.title = title
        self.detail = detail
        self.status = status


@dataclass(frozen=True)
class Consent:
    pending: PendingAuthorization
    browser_secret: str


@dataclass(frozen=True)
class Redirect:
    url: str


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def with_query(uri: str, params: Mapping[str, str]) -> str:
    return f"{uri}{'&' if '?' in uri else '?'}{urlencode(params)}"


def client_error(pending_uri: str, issuer: str, state: str, error: str, description: str) -> Redirect:
    """An authorization error response (RFC 6749 section 4.1.2.1, RFC 9207 ``iss``)."""
    params = {"error": error, "error_description": description}
    if state:
        params["state"] = state
    params["iss"] = issuer
    return Redirect(with_query(pending_uri, params))


class AuthorizationServer:
    def __init__(
        self,
        store: AuthorizationStore,
        documents: ClientDocuments,
        upstream: UpstreamIdentityProvider,
        keys: SigningKeys,
        settings: FacadeSettings,
        clock: Clock,
        *,
        machines: bool = False,
        tenant_claim: str = "",
    ) -> None:
        self.machines = machines
        """client_credentials is relayed to the upstream (the client-credentials extension is on)."""
        self.tenant_claim = tenant_claim
        """The claim naming a user's tenant, upstream and in our tokens; empty: no tenants."""
        self.store = store
        self.documents = documents
        self.upstream = upstream
        self.keys = keys
        self.settings = settings
        self.clock = clock

    # -- discovery -----------------------------------------------------------------------------
    def metadata(self, site: Site) -> dict[str, Any]:
        """RFC 8414 section 2 (plus RFC 9207 and the client ID metadata document flag)."""
        return {
            "issuer": site.issuer,
            "authorization_endpoint": site.url(AUTHORIZE_PATH),
            "token_endpoint": site.url(TOKEN_PATH),
            "registration_endpoint": site.url(REGISTER_PATH),
            "jwks_uri": site.url(JWKS_PATH),
            "scopes_supported": list(site.scopes_supported),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": [*GRANT_TYPES, *(["client_credentials"] if self.machines else [])],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": True,
        }

    # -- registration (RFC 7591) ---------------------------------------------------------------------
    def register(self, body: object) -> dict[str, Any]:
        record, secret = register(body, self._now(), self.settings.client_seconds)
        self.store.put_client(record)
        return registration_response(record, secret)

    # -- the authorization request -------------------------------------------------------------------
    def begin(self, site: Site, query: Mapping[str, str], repeated: frozenset[str]) -> Consent | Redirect:
        if {"client_id", "redirect_uri"} & repeated:
            raise PageError("Invalid request", "client_id and redirect_uri must appear once")
        client = self._client_for_page(query.get("client_id", ""))
        redirect_uri = self._redirect_uri(client, query.get("redirect_uri"))
        state = query.get("state", "")

        def refuse(error: str, description: str) -> Redirect:
            return client_error(redirect_uri, site.issuer, state[:MAX_STATE_CHARS], error, description)

        if repeated:
            return refuse("invalid_request", f"parameters repeated: {', '.join(sorted(repeated))}")
        if len(state) > MAX_STATE_CHARS:
            return refuse("invalid_request", f"state must be at most {MAX_STATE_CHARS} characters")
        if query.get("response_type") != "code":
            return refuse("unsupported_response_type", "only response_type=code is supported")
        challenge = query.get("code_challenge", "")
        if not challenge:
            return refuse("invalid_request", "code_challenge is required (PKCE)")
        if query.get("code_challenge_method") != "S256":
            return refuse("invalid_request", "code_challenge_method must be S256")
        if not _CHALLENGE.fullmatch(challenge):
            return refuse("invalid_request", "code_challenge must be the base64url SHA-256 of the verifier")
        resource = query.get("resource", site.resource)
        if resource != site.resource:
            return refuse("invalid_target", f"this server issues tokens for {site.resource} only")
        browser_secret = secrets.token_urlsafe(32)
        pending = PendingAuthorization(
            request_id=secrets.token_urlsafe(24),
            client_id=client.client_id,
            client_name=client.client_name,
            redirect_uri=redirect_uri,
            redirect_uri_given="redirect_uri" in query,
            state=state,
            code_challenge=challenge,
            scope=self._granted_scope(site, query.get("scope")),
            resource=resource,
            issuer=site.issuer,
            browser_hash=digest(browser_secret),
            upstream_verifier=secrets.token_urlsafe(48),
            refreshable=client.refreshable,
            expires_at=self._now() + REQUEST_SECONDS,
        )
        self.store.put_request(pending)
        return Consent(pending, browser_secret)

    def decide(self, site: Site, request_id: str, browser_secret: str, approve: bool) -> Redirect:
        pending = self._pending(site, request_id, browser_secret)
        if not approve:
            self.store.finish(request_id)
            return client_error(
                pending.redirect_uri, site.issuer, pending.state, "access_denied", "the user denied access"
            )
        # A second click (or a reload) of the same browser goes upstream again: the same URL.
        self.store.approve(request_id, pending.browser_hash)
        try:
            url = self.upstream.authorization_url(site.url(CALLBACK_PATH), request_id, s256(pending.upstream_verifier))
        except (UpstreamUnavailable, FacadeUnavailable):
            logger.exception("upstream sign-in unavailable")
            self.store.finish(request_id)
            return client_error(
                pending.redirect_uri,
                site.issuer,
                pending.state,
                "temporarily_unavailable",
                "the sign-in service is unavailable",
            )
        return Redirect(url)

    def complete(self, site: Site, query: Mapping[str, str], browser_secret: str) -> Redirect:
        """The upstream's redirect back: redeem its code, issue ours to the client."""
        pending = self._pending(site, query.get("state", ""), browser_secret)
        if not pending.approved:
            raise PageError("Not approved", "This sign-in was not approved on the consent page.", 403)
        if not self.store.finish(pending.request_id):
            raise PageError("Sign-in already completed", "This sign-in has already been completed.")

        def refuse(error: str, description: str) -> Redirect:
            return client_error(pending.redirect_uri, site.issuer, pending.state, error, description)

        upstream_error = query.get("error")
        if upstream_error is not None:
            if upstream_error == "access_denied":
                return refuse("access_denied", "the sign-in was cancelled or refused")
            return refuse("server_error", f"the upstream sign-in failed ({upstream_error[:64]})")
        code = query.get("code", "")
        if not code:
            return refuse("server_error", "the upstream sign-in returned no code")
        try:
            user = self.upstream.user(code, site.url(CALLBACK_PATH), pending.upstream_verifier)
        except ValueError:
            return refuse("access_denied", "the sign-in expired: start again")
        except (UpstreamUnavailable, FacadeUnavailable):
            logger.exception("upstream code redemption failed")
            return refuse("temporarily_unavailable", "the sign-in service is unavailable")
        try:
            tenant = self._tenant(user, "access_denied", "this account")
        except OAuthError as exc:
            return refuse(exc.error, exc.description)
        ours = secrets.token_urlsafe(32)
        self.store.put_code(
            ours,
            CodeGrant(
                client_id=pending.client_id,
                redirect_uri=pending.redirect_uri,
                redirect_uri_given=pending.redirect_uri_given,
                code_challenge=pending.code_challenge,
                scope=pending.scope,
                resource=pending.resource,
                issuer=pending.issuer,
                subject=user.subject,
                refreshable=pending.refreshable,
                expires_at=self._now() + CODE_SECONDS,
                grant_id=secrets.token_urlsafe(16),
                tenant=tenant,
            ),
        )
        params = {"code": ours}
        if pending.state:
            params["state"] = pending.state
        params["iss"] = site.issuer  # RFC 9207: the client checks which server answered
        return Redirect(with_query(pending.redirect_uri, params))

    # -- the token endpoint -------------------------------------------------------------------------
    def token(
        self, site: Site, form: Mapping[str, str], repeated: frozenset[str], basic: tuple[str, str] | None
    ) -> dict[str, Any]:
        if repeated:
            raise OAuthError("invalid_request", f"parameters repeated: {', '.join(sorted(repeated))}")
        grant_type = form.get("grant_type")
        if not grant_type:
            raise OAuthError("invalid_request", "grant_type is required")
        if grant_type == "client_credentials" and self.machines:
            return self._client_credentials(site, form, basic)
        if grant_type not in GRANT_TYPES:
            raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
        client_id, record = self._authenticate_client(form, basic)
        if grant_type == "authorization_code":
            return self._redeem_code(site, client_id, record, form)
        return self._refresh(site, client_id, form)

    def _redeem_code(
        self, site: Site, client_id: str, record: ClientRecord | None, form: Mapping[str, str]
    ) -> dict[str, Any]:
        code, verifier = form.get("code", ""), form.get("code_verifier", "")
        if not code:
            raise OAuthError("invalid_request", "code is required")
        if not verifier:
            raise OAuthError("invalid_request", "code_verifier is required (PKCE)")
        grant = self.store.code(code)
        if grant is None:
            raise OAuthError("invalid_grant", "the code is invalid or has expired")
        if grant.used:
            self.store.revoke_grant(grant.grant_id)  # RFC 6749 4.1.2: a replayed code revokes its tokens
            raise OAuthError("invalid_grant", "the code was already used")
        if grant.client_id != client_id:
            raise OAuthError("invalid_grant", "the code was issued to another client")
        if grant.issuer != site.issuer:
            raise OAuthError("invalid_grant", "the code was issued by another server")
        presented = form.get("redirect_uri")
        if (presented is not None or grant.redirect_uri_given) and presented != grant.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri does not match the authorization request")
        if not _VERIFIER.fullmatch(verifier) or not hmac.compare_digest(s256(verifier), grant.code_challenge):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
        if form.get("resource", grant.resource) != grant.resource:
            raise OAuthError("invalid_target", "resource differs from the authorization request")
        self._require_tenant(grant.tenant, "the code")
        refresh = None
        if grant.refreshable:
            refresh = (
                secrets.token_urlsafe(32),
                RefreshGrant(
                    grant_id=grant.grant_id,
                    client_id=client_id,
                    subject=grant.subject,
                    scope=grant.scope,
                    resource=grant.resource,
                    issuer=grant.issuer,
                    expires_at=self._now() + self.settings.refresh_token_seconds,
                    tenant=grant.tenant,
                ),
            )
        outcome = self.store.redeem_code(code, refresh)
        if outcome == Redemption.USED:
            self.store.revoke_grant(grant.grant_id)
            raise OAuthError("invalid_grant", "the code was already used")
        if outcome != Redemption.DONE:
            raise OAuthError("invalid_grant", "the code has expired")
        if record is not None:
            self._extend(record)
        return self._tokens(
            grant.issuer,
            grant.subject,
            grant.resource,
            client_id,
            grant.scope,
            refresh[0] if refresh else None,
            tenant=grant.tenant,
        )

    def _refresh(self, site: Site, client_id: str, form: Mapping[str, str]) -> dict[str, Any]:
        token = form.get("refresh_token", "")
        if not token:
            raise OAuthError("invalid_request", "refresh_token is required")
        grant = self.store.refresh(token)
        if grant is None:
            raise OAuthError("invalid_grant", "the refresh token is invalid or has expired")
        if grant.client_id != client_id:
            raise OAuthError("invalid_grant", "the refresh token was issued to another client")
        if grant.used:
            # Reuse of a rotated token: stolen or replayed. Its whole grant ends (OAuth 2.1 4.3.1).
            self.store.revoke_grant(grant.grant_id)
            raise OAuthError("invalid_grant", "the refresh token was already used; sign in again")
        if grant.issuer != site.issuer:
            raise OAuthError("invalid_grant", "the refresh token was issued by another server")
        if form.get("resource", grant.resource) != grant.resource:
            raise OAuthError("invalid_target", "resource differs from the original grant")
        self._require_tenant(grant.tenant, "the refresh token")
        scope = grant.scope
        if "scope" in form:
            asked = tuple(dict.fromkeys(form["scope"].split()))
            if not set(asked) <= set(grant.scope):
                raise OAuthError("invalid_scope", "a refresh cannot add scopes the sign-in did not grant")
            scope = asked
        successor = secrets.token_urlsafe(32)
        outcome = self.store.rotate_refresh(token, successor, grant)
        if outcome == Redemption.USED:
            self.store.revoke_grant(grant.grant_id)
            raise OAuthError("invalid_grant", "the refresh token was already used; sign in again")
        if outcome != Redemption.DONE:
            raise OAuthError("invalid_grant", "the sign-in was revoked or has expired")
        return self._tokens(
            grant.issuer, grant.subject, grant.resource, client_id, scope, successor, tenant=grant.tenant
        )

    def _client_credentials(self, site: Site, form: Mapping[str, str], basic: tuple[str, str] | None) -> dict[str, Any]:
        """A machine client of the upstream issuer (e.g. the Cognito machine app client): the
        upstream checks its id and secret; the facade issues a token bound to this resource."""
        if basic is not None and ("client_secret" in form or form.get("client_id", basic[0]) != basic[0]):
            raise OAuthError("invalid_request", "use one client authentication method")
        client_id, secret = basic if basic is not None else (form.get("client_id", ""), form.get("client_secret"))
        if not client_id or not secret:
            raise InvalidClient("client_credentials needs the client's id and secret")
        if form.get("resource", site.resource) != site.resource:
            raise OAuthError("invalid_target", f"this server issues tokens for {site.resource} only")
        machine, granted = self.upstream.client_credentials(client_id, secret, form.get("scope"))
        tenant = self._tenant(machine, "unauthorized_client", "this client")
        scope = tuple(name for name in granted if name in site.scopes_supported)
        return self._tokens(site.issuer, machine.subject, site.resource, client_id, scope, None, tenant=tenant)

    def _tenant(self, user: UpstreamUser, error: str, who: str) -> str | None:
        """The user's tenant from the upstream's claim; None without tenants. With tenants, a user
        the upstream names no valid tenant for is refused (``error``): served without one, it
        would be a caller outside every tenant, which such a deployment does not have."""
        if not self.tenant_claim:
            return None
        value = user.claims.get(self.tenant_claim)
        if not is_tenant(value):
            named = f"the issuer's {self.tenant_claim!r} claim names none ({TENANT_SYNTAX})"
            raise OAuthError(error, f"{who} has no tenant here: {named}")
        return require_tenant(value)

    def _require_tenant(self, tenant: str | None, what: str) -> None:
        """A code or refresh token of a sign-in without a tenant (before tenants were switched on)
        gives no more tokens once they are: the client signs the user in again."""
        if self.tenant_claim and tenant is None:
            raise OAuthError("invalid_grant", f"{what} belongs to a sign-in without a tenant; sign in again")

    def _tokens(
        self,
        issuer: str,
        subject: str,
        resource: str,
        client_id: str,
        scope: tuple[str, ...],
        refresh: str | None,
        *,
        tenant: str | None,
    ) -> dict[str, Any]:
        access = mint_access_token(
            self.keys,
            issuer=issuer,
            subject=subject,
            audience=resource,
            client_id=client_id,
            scope=scope,
            now=self._now(),
            lifetime_seconds=self.settings.access_token_seconds,
            tenant_claim=self.tenant_claim,
            tenant=tenant,
        )
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.settings.access_token_seconds,
            "scope": " ".join(scope),
        }
        if refresh is not None:
            body["refresh_token"] = refresh
        return body

    # -- helpers -------------------------------------------------------------------------------------
    def _client_for_page(self, client_id: str) -> ClientRecord:
        if not client_id:
            raise PageError("Invalid request", "client_id is missing.")
        if is_document_client_id(client_id):
            try:
                return self.documents.client(client_id)
            except OAuthError as exc:
                raise PageError("Unknown client", exc.description) from None
        record = self.store.client(client_id) if is_registered_client_id(client_id) else None
        if record is None:
            raise PageError("Unknown client", "This client is not registered here (or its registration expired).")
        return record

    @staticmethod
    def _redirect_uri(client: ClientRecord, presented: str | None) -> str:
        if presented is None:
            if len(client.redirect_uris) == 1:
                return client.redirect_uris[0]
            raise PageError("Invalid request", "redirect_uri is required: the client registered several.")
        if not any(redirect_uri_matches(registered, presented) for registered in client.redirect_uris):
            # Never redirected: a code or an error must not reach a URI the client does not own.
            raise PageError("Invalid redirect URI", "The redirect URI is not registered for this client.")
        return presented

    @staticmethod
    def _granted_scope(site: Site, requested: str | None) -> tuple[str, ...]:
        """What the client asked for that this resource knows; scopes it does not know (openid,
        offline_access, ...) are ignored rather than refused; nothing known: the required ones."""
        asked = tuple(dict.fromkeys((requested or "").split()))
        known = tuple(scope for scope in asked if scope in site.scopes_supported)
        return known or site.required_scopes

    def _pending(self, site: Site, request_id: str, browser_secret: str) -> PendingAuthorization:
        pending = self.store.request(request_id) if REQUEST_ID.fullmatch(request_id) else None
        if pending is None or pending.issuer != site.issuer:
            raise PageError("Sign-in expired", "This authorization request has expired or was already used.")
        if not browser_secret or not hmac.compare_digest(digest(browser_secret), pending.browser_hash):
            # Not the browser that was shown the consent page (a forged form post, another device).
            raise PageError("Wrong browser", "Continue this sign-in in the browser where it started.", 403)
        return pending

    def _authenticate_client(
        self, form: Mapping[str, str], basic: tuple[str, str] | None
    ) -> tuple[str, ClientRecord | None]:
        """(client id, its registration; None for a metadata-document client), or invalid_client."""
        if basic is not None and ("client_secret" in form or form.get("client_id", basic[0]) != basic[0]):
            raise OAuthError("invalid_request", "use one client authentication method")
        client_id, secret = basic if basic is not None else (form.get("client_id", ""), form.get("client_secret"))
        if not client_id:
            raise InvalidClient("client_id is required")
        if is_document_client_id(client_id):
            if secret is not None:
                raise InvalidClient("a metadata-document client has no secret")
            return client_id, None
        record = self.store.client(client_id) if is_registered_client_id(client_id) else None
        if record is None:
            raise InvalidClient("unknown client, or its registration expired")
        if record.auth_method == "none":
            if secret is not None:
                raise InvalidClient("this client is public: it has no secret")
        elif secret is None or not record.secret_matches(secret):
            raise InvalidClient("client authentication failed")
        return client_id, record

    def _extend(self, record: ClientRecord) -> None:
        """A client in use stays registered; written at most once per half lifetime."""
        now = self._now()
        if record.expires_at - now < self.settings.client_seconds // 2:
            self.store.extend_client(record.client_id, now + self.settings.client_seconds)

    def _now(self) -> int:
        return math.floor(self.clock.now())
