"""The facade over HTTP: its paths on the endpoint's origin, as one ASGI app.

Public endpoints a client (or a browser-based client) calls directly answer JSON with
``Access-Control-Allow-Origin: *`` and no credentials: metadata, JWKS, registration and the token
endpoint. The browser endpoints (``/authorize``, ``/callback``) answer HTML pages and redirects;
the consent cookie (``HttpOnly``, ``SameSite=Lax``, ``Secure`` on https) binds a sign-in to the
browser that was shown the consent page: a form posted from another site carries no cookie
(``Lax``), and the upstream's top-level redirect back does.

Input is bounded before it is read (bodies to :data:`MAX_BODY_BYTES`, parameters to
:data:`MAX_FIELDS`); a refusal is an OAuth error (JSON, or a page in the browser), a failing
dependency a 503 that says so, never a 500.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote

from mcp_platform.application.auth.resource import ProtectedResource, origin
from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.governance.admission import Governor, Refused
from mcp_platform.application.governance.ports import CountersUnavailable
from mcp_platform.application.metrics import GOVERNANCE_REFUSALS, GOVERNANCE_RULE, MetricsWriter
from mcp_platform.authorization_server import (
    AUTHORIZE_PATH,
    CALLBACK_PATH,
    JWKS_PATH,
    METADATA_PATH,
    REGISTER_PATH,
    TOKEN_PATH,
)
from mcp_platform.authorization_server.errors import FacadeUnavailable, OAuthError
from mcp_platform.authorization_server.service import REQUEST_ID, AuthorizationServer, Consent, PageError, Site
from mcp_platform.protocol import compact_json
from mcp_platform.transport.facade.pages import SECURITY_HEADERS, consent_page, error_page
from mcp_platform.transport.messages import HttpError, HttpRequest, read_body, send_empty, send_json

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 16 * 1024
MAX_FIELDS = 32
COOKIE_PREFIX = "mcp_consent_"
CORS = {"access-control-allow-origin": "*"}
NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}
PREFLIGHT = {
    **CORS,
    "access-control-allow-methods": "GET, POST",
    "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
    "access-control-max-age": "600",
}
PUBLIC_CACHE = {"cache-control": "public, max-age=300"}
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


def parse_params(raw: str) -> tuple[dict[str, str], frozenset[str]]:
    """Parameters (first value of each) and the names that appear more than once (RFC 6749
    section 3.1: none may); OAuthError ``invalid_request`` when they cannot be read."""
    try:
        pairs = parse_qsl(raw, keep_blank_values=True, max_num_fields=MAX_FIELDS, errors="strict")
    except (ValueError, UnicodeDecodeError):
        raise OAuthError("invalid_request", f"malformed parameters (at most {MAX_FIELDS}, UTF-8)") from None
    values: dict[str, str] = {}
    repeated: set[str] = set()
    for name, value in pairs:
        if name in values:
            repeated.add(name)
        else:
            values[name] = value
    return values, frozenset(repeated)


def basic_credentials(headers: Mapping[str, str]) -> tuple[str, str] | None:
    """RFC 6749 section 2.3.1: ``Basic base64(urlencode(id):urlencode(secret))``."""
    value = headers.get("authorization", "")
    scheme, _, encoded = value.partition(" ")
    if not value or scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError("invalid_request", "malformed Basic credentials") from None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        raise OAuthError("invalid_request", "malformed Basic credentials")
    return unquote(client_id), unquote(secret)


def cookies(headers: Mapping[str, str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name.startswith(COOKIE_PREFIX):
            found.setdefault(name, value)
    return found


class FacadeApp:
    """The facade's routes; everything else of the endpoint never reaches it."""

    def __init__(
        self,
        server: AuthorizationServer,
        resource: ProtectedResource,
        *,
        body_timeout_seconds: float = 10.0,
        blocking: Blocking = IN_THREAD,
        governor: Governor | None = None,
        metrics: MetricsWriter | None = None,
    ) -> None:
        self.server = server
        self.metrics = metrics
        """Where a refusal is counted (``mcp.server.governance.refused``), as the endpoint counts its own."""
        self.blocking = blocking
        self.governor = governor
        """Rate limits on ``register`` or ``token``: those requests are counted before they run."""
        self.resource = resource
        self.body_timeout_seconds = body_timeout_seconds
        self._routes = {
            METADATA_PATH: self._metadata,
            JWKS_PATH: self._jwks,
            REGISTER_PATH: self._register,
            TOKEN_PATH: self._token,
            AUTHORIZE_PATH: self._authorize,
            CALLBACK_PATH: self._callback,
        }

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        request = HttpRequest(scope)
        route = self._routes[request.path]
        browser = request.path in (AUTHORIZE_PATH, CALLBACK_PATH)
        try:
            site = self._site(request)
            if request.method == "OPTIONS" and not browser:
                await send_empty(send, 204, PREFLIGHT)
                return
            await route(site, request, scope, receive, send)
        except OAuthError as exc:
            if browser:
                await _send_page(send, exc.status, "Invalid request", exc.description)
            else:
                extra = {"www-authenticate": 'Basic realm="mcp"'} if exc.status == 401 else {}
                await send_json(send, exc.status, exc.body(), {**CORS, **NO_STORE, **extra})
        except PageError as exc:
            await _send_page(send, exc.status, exc.title, exc.detail)
        except Refused as exc:
            # 429 with Retry-After, and an OAuth error body (as Auth0 answers its token endpoint's limit).
            if self.metrics is not None:
                self.metrics.count(GOVERNANCE_REFUSALS, per=(GOVERNANCE_RULE, exc.rule_name))
            body = {"error": "too_many_requests", "error_description": str(exc)}
            await send_json(send, 429, body, {**CORS, **NO_STORE, "retry-after": str(exc.retry_after_seconds)})
        except HttpError as exc:  # the body: too large (413), too slow (408), malformed
            error = OAuthError("invalid_request", exc.error.message, exc.status)
            if browser:
                await _send_page(send, exc.status, "Invalid request", exc.error.message)
            else:
                await send_json(send, exc.status, error.body(), {**CORS, **NO_STORE, **exc.headers})
        except Exception:
            # A dependency failed (the table, the key secret): the client may retry; nothing of
            # its input is to blame, and nothing of the failure (a secret's name) is shown.
            logger.exception("oauth facade: %s %s failed", request.method, request.path)
            if browser:
                await _send_page(send, 503, "Temporarily unavailable", "The sign-in service is unavailable; try again.")
            else:
                body = {"error": "temporarily_unavailable", "error_description": "try again later"}
                await send_json(send, 503, body, {**CORS, **NO_STORE, "retry-after": "1"})

    def _site(self, request: HttpRequest) -> Site:
        resource = self.resource.resource_for(request.headers)
        if resource is None:
            # Unknown Host: no issuer to be (the resource refuses it the same way, 421).
            raise OAuthError("invalid_request", "this host is not served by this authorization server", 421)
        return Site(
            issuer=origin(resource),
            resource=resource,
            scopes_supported=self.resource.scopes_supported,
            required_scopes=self.resource.required_scopes,
        )

    # -- JSON endpoints --------------------------------------------------------------------------
    async def _metadata(self, site: Site, request: HttpRequest, scope: dict[str, Any], receive: Any, send: Any) -> None:
        _require(request, "GET")
        await send_json(send, 200, self.server.metadata(site), {**CORS, **PUBLIC_CACHE})

    async def _jwks(self, site: Site, request: HttpRequest, scope: dict[str, Any], receive: Any, send: Any) -> None:
        _require(request, "GET")
        keys = await self.blocking(self.server.keys.jwks)
        await send_json(send, 200, keys, {**CORS, **PUBLIC_CACHE})

    async def _register(self, site: Site, request: HttpRequest, scope: dict[str, Any], receive: Any, send: Any) -> None:
        _require(request, "POST")
        await self._admit("register", "")  # registrations count together: nobody is signed in yet
        body = await self._body(request, receive, JSON)
        try:
            document = compact_json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise OAuthError("invalid_client_metadata", "the body is not valid JSON") from None
        registered = await self.blocking(self.server.register, document)
        await send_json(send, 201, registered, {**CORS, **NO_STORE})

    async def _token(self, site: Site, request: HttpRequest, scope: dict[str, Any], receive: Any, send: Any) -> None:
        _require(request, "POST")
        if request.count("authorization") > 1:
            raise OAuthError("invalid_request", "one Authorization header at most")
        basic = basic_credentials(request.headers)
        form, repeated = parse_params((await self._body(request, receive, FORM)).decode("latin-1"))
        await self._admit("token", basic[0] if basic is not None else form.get("client_id", ""))
        answer = await self.blocking(self.server.token, site, form, repeated, basic)
        await send_json(send, 200, answer, {**CORS, **NO_STORE})

    async def _admit(self, endpoint: str, client_id: str) -> None:
        if self.governor is None:
            return
        try:
            await self.governor.admit_facade(endpoint, client_id)
        except CountersUnavailable as exc:
            raise FacadeUnavailable(str(exc)) from exc  # answered 503: the limits hold

    # -- browser endpoints -----------------------------------------------------------------------------
    async def _authorize(
        self, site: Site, request: HttpRequest, scope: dict[str, Any], receive: Any, send: Any
    ) -> None:
        if request.method == "GET":
            query, repeated = parse_params(_query(scope))
            outcome = await self.blocking(self.server.begin, site, query, repeated)
            if not isinstance(outcome, Consent):
                await _redirect(send, outcome.url)
                return
            pending = outcome.pending
            page = consent_page(
                action=AUTHORIZE_PATH,
                request_id=pending.request_id,
                client_name=pending.client_name,
                client_id=pending.client_id,
                redirect_uri=pending.redirect_uri,
                resource=pending.resource,
                scopes=pending.scope,
            )
            cookie = _cookie(site, COOKIE_PREFIX + pending.request_id, outcome.browser_secret, max_age=600)
            await _send_html(send, 200, page, {"set-cookie": cookie})
            return
        _require(request, "POST")
        sent_from = request.headers.get("origin")
        if sent_from is not None and sent_from != site.issuer:
            raise PageError("Refused", "The consent form must be submitted from this site.", 403)
        form, repeated = parse_params((await self._body(request, receive, FORM)).decode("latin-1"))
        request_id = form.get("request", "")
        decision = form.get("decision")
        if repeated or decision not in ("approve", "deny") or not REQUEST_ID.fullmatch(request_id):
            raise PageError("Invalid request", "The consent form was not filled in as sent.")
        secret = cookies(request.headers).get(COOKIE_PREFIX + request_id, "")
        outcome_redirect = await self.blocking(self.server.decide, site, request_id, secret, decision == "approve")
        await _redirect(send, outcome_redirect.url)

    async def _callback(self, site: Site, request: HttpRequest, scope: dict[str, Any], receive: Any, send: Any) -> None:
        _require(request, "GET")
        query, repeated = parse_params(_query(scope))
        if repeated:
            raise PageError("Invalid request", "The sign-in response repeats parameters.")
        request_id = query.get("state", "")
        if not REQUEST_ID.fullmatch(request_id):  # also keeps client bytes out of the cookie header
            raise PageError("Sign-in expired", "This authorization request has expired or was already used.")
        secret = cookies(request.headers).get(COOKIE_PREFIX + request_id, "")
        outcome = await self.blocking(self.server.complete, site, query, secret)
        # The cookie has served its purpose: the browser forgets it.
        expired = _cookie(site, COOKIE_PREFIX + request_id, "", max_age=0)
        await _redirect(send, outcome.url, {"set-cookie": expired})

    async def _body(self, request: HttpRequest, receive: Any, media_type: str) -> bytes:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != media_type:
            raise OAuthError("invalid_request", f"Content-Type must be {media_type}")
        return await read_body(
            receive, MAX_BODY_BYTES, request.headers.get("content-length"), self.body_timeout_seconds
        )


def _require(request: HttpRequest, method: str) -> None:
    if request.method != method:
        raise OAuthError("invalid_request", f"{request.path} accepts {method} only", 405)


def _query(scope: dict[str, Any]) -> str:
    return bytes(scope.get("query_string", b"")).decode("latin-1")


def _cookie(site: Site, name: str, value: str, *, max_age: int) -> str:
    secure = "; Secure" if site.issuer.startswith("https://") else ""
    return f"{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}"


async def _redirect(send: Any, url: str, headers: Mapping[str, str] | None = None) -> None:
    # A short body, never an empty one: behind the Web Adapter's streaming mode an empty body
    # may get no terminating chunk (REFERENCE.md), and a browser would wait on the redirect.
    body = b"Redirecting..."
    await send(
        {
            "type": "http.response.start",
            "status": 302,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *(
                    (name.encode(), value.encode("latin-1"))
                    for name, value in {"location": url, **NO_STORE, **(headers or {})}.items()
                ),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _send_page(send: Any, status: int, title: str, detail: str) -> None:
    await _send_html(send, status, error_page(title, detail))


async def _send_html(send: Any, status: int, page: str, headers: Mapping[str, str] | None = None) -> None:
    payload = page.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-length", str(len(payload)).encode()),
                *(
                    (name.encode(), value.encode("latin-1"))
                    for name, value in {**SECURITY_HEADERS, **(headers or {})}.items()
                ),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
