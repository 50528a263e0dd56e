"""The facade's two HTML pages: the consent page and the error page. Everything shown is escaped.

The consent page names what the user is about to let in, before anything is sent upstream (a
proxy with one upstream client id must not become a confused deputy, MCP authorization,
"Confused Deputy Problem"): the client's name (its own word, so marked as such), its client id
(for a metadata document: the URL, i.e. the domain vouching for it), the host the code will be
sent to, with a warning when that is the user's own machine (any local program could claim any
name there), the resource and the scopes. The form posts back to this origin with the request id;
the browser's consent cookie proves it is the browser that was shown the page.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlsplit

from mcp_platform.authorization_server.urls import is_loopback_host

SECURITY_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "x-frame-options": "DENY",  # no clickjacking of the approve button
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    # same-origin, not no-referrer: the consent form's POST must carry its Origin (checked).
    "referrer-policy": "same-origin",
    "x-content-type-options": "nosniff",
}
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}"
    "code{background:#f3f3f3;padding:0 .2rem;word-break:break-all}.warn{background:#fff4d6;padding:.6rem}"
    "button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem}"
)


def consent_page(
    *,
    action: str,
    request_id: str,
    client_name: str,
    client_id: str,
    redirect_uri: str,
    resource: str,
    scopes: tuple[str, ...],
) -> str:
    host = urlsplit(redirect_uri).hostname or redirect_uri
    local = is_loopback_host(host)
    warning = (
        '<p class="warn">The sign-in result goes to a program on <b>this computer</b>. Any program '
        "on it can claim any name: approve only if you just started this sign-in yourself.</p>"
        if local
        else ""
    )
    scope_items = "".join(f"<li><code>{escape(scope)}</code></li>" for scope in scopes) or "<li>(none)</li>"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Authorize access</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>Allow <i>{escape(client_name)}</i> to use this MCP server?</h1>"
        f"<p>The application calls itself <b>{escape(client_name)}</b> (its own claim) "
        f"and is identified by <code>{escape(client_id)}</code>.</p>"
        f"<p>If you allow it, it receives access to <code>{escape(resource)}</code> "
        f"at <b>{escape(host)}</b> (<code>{escape(redirect_uri)}</code>).</p>{warning}"
        f"<p>Permissions:</p><ul>{scope_items}</ul>"
        "<p>You will be asked to sign in next.</p>"
        f"<form method='post' action='{escape(action)}'>"
        f"<input type='hidden' name='request' value='{escape(request_id)}'>"
        "<button type='submit' name='decision' value='approve'>Allow</button>"
        "<button type='submit' name='decision' value='deny'>Deny</button>"
        "</form></body></html>"
    )


def error_page(title: str, detail: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Authorization failed</title>"
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1><p>{escape(detail)}</p>"
        "<p>Close this window and start the sign-in again from your application.</p></body></html>"
    )
