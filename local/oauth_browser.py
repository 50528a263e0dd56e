"""A scripted browser for OAuth sign-ins on loopback: what a person does, done by httpx.

It loads the authorization URL, follows redirects, and on each HTML page submits the page's
form as a person would: the facade's consent page with ``decision=approve`` (or ``deny``), the
development issuer's login page as it is (or with ``fields`` typed in). It keeps cookies like a
browser (the facade binds a sign-in to the browser that saw its consent page) and stops at the
client's redirect URI, returning that URL (with ``deliver``: after loading it, as a browser would,
so a waiting client's callback server receives it). Used by the tests and by ``make conformance``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx

MAX_STEPS = 12


class SignInFailed(RuntimeError):
    """The flow did not reach the client's redirect URI (the message has the last page)."""


@dataclass
class Form:
    action: str = ""
    method: str = "get"
    fields: dict[str, str] = field(default_factory=dict)
    buttons: dict[str, list[str]] = field(default_factory=dict)


class _FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.form: Form | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form" and self.form is None:
            self.form = Form(values.get("action", ""), values.get("method", "get").lower())
        elif self.form is not None and tag == "input" and values.get("name"):
            self.form.fields[values["name"]] = values.get("value", "")
        elif self.form is not None and tag == "button" and values.get("name"):
            self.form.buttons.setdefault(values["name"], []).append(values.get("value", ""))


def page_form(page: str) -> Form | None:
    parser = _FormParser()
    parser.feed(page)
    return parser.form


@dataclass
class ScriptedBrowser:
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=15))
    pages: list[str] = field(default_factory=list)
    """Every URL loaded, in order (tests check which pages the flow went through)."""

    def sign_in(
        self,
        url: str,
        redirect_uri: str,
        *,
        approve: bool = True,
        deliver: bool = False,
        fields: Mapping[str, str] | None = None,
    ) -> str:
        """Follow the flow from ``url`` until it redirects to ``redirect_uri``; return that URL.
        ``fields``: what the person types into the forms' fields of those names (e.g. a tenant)."""
        response = self._load("GET", url)
        for _ in range(MAX_STEPS):
            if response.is_redirect:
                target = urljoin(str(response.url), response.headers["location"])
                if target.split("?", 1)[0] == redirect_uri.split("?", 1)[0]:
                    if deliver:
                        self._load("GET", target)
                    return target
                response = self._load("GET", target)
                continue
            form = page_form(response.text) if response.status_code == 200 else None
            if form is None:
                raise SignInFailed(f"{response.status_code} at {response.url}: {response.text[:500]}")
            data = dict(form.fields)
            data.update({name: value for name, value in (fields or {}).items() if name in form.fields})
            if "decision" in form.buttons:  # the consent page
                data["decision"] = "approve" if approve else "deny"
            target = urljoin(str(response.url), form.action or str(response.url))
            response = self._load(form.method.upper(), target, data)
        raise SignInFailed(f"no redirect to {redirect_uri} after {MAX_STEPS} steps")

    def _load(self, method: str, url: str, data: dict[str, str] | None = None) -> httpx.Response:
        self.pages.append(url)
        if method == "POST":
            return self.client.post(url, data=data)
        return self.client.get(url, params=data)
