"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865): a tool names an HTML view the host renders
in a sandboxed iframe, and the host pushes the tool's input and result into it.

Two parts, as in the SDK's ``mcp.server.apps``: a tool whose listing carries
``_meta.ui.resourceUri`` (``@tool(ui="ui://...")``, and ``visibility``), and that ``ui://``
resource, served as ``text/html;profile=mcp-app`` with its ``_meta.ui`` (the CSP origins, iframe
permissions, dedicated domain and border preference the host builds the sandbox from) in
``resources/list`` and in ``resources/read`` contents. The server sends and receives no ``ui/*``
message: that traffic is between the host and the iframe.

The rules hold at import and at discovery, before any host sees the server: a UI URI is a
``ui://`` URI; a ``ui://`` resource is one fixed resource of the app MIME type; a tool naming a
view that no feature module serves fails the start. The extension is advertised only when a view
is served (:class:`~mcp_platform.protocol.features.AppsFeature`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

EXTENSION_ID = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of a ``ui://`` resource: what tells a host "render this as an app"."""
UI_SCHEME = "ui://"
Visibility = Literal["model", "app"]
VISIBILITIES: tuple[Visibility, ...] = ("model", "app")


def require_ui_uri(uri: object, what: str) -> str:
    """``uri`` if it is a ``ui://`` URI naming something; TypeError otherwise."""
    if not isinstance(uri, str) or not uri.startswith(UI_SCHEME) or len(uri) == len(UI_SCHEME):
        raise TypeError(f"{what}: an MCP Apps view is a ui:// URI (e.g. 'ui://counter/view.html'), got {uri!r}")
    return uri


def is_ui_uri(uri: str) -> bool:
    return uri.startswith(UI_SCHEME)


@dataclass(frozen=True)
class ToolUi:
    """A tool's ``_meta.ui``: the view that renders its results, and who may call it."""

    resource_uri: str
    visibility: tuple[Visibility, ...] | None = None
    """``model``: the model may call it; ``app``: the view may (``tools/call`` through the host).
    None: both, the spec's default. Hosts filter; every tool is listed to every client."""

    @classmethod
    def of(cls, tool_name: str, resource_uri: str, visibility: Iterable[str] | None) -> ToolUi:
        require_ui_uri(resource_uri, f"tool {tool_name}: ui")
        if visibility is None:
            return cls(resource_uri)
        if isinstance(visibility, str):
            raise TypeError(f"tool {tool_name}: visibility is a list, e.g. ['app'], got {visibility!r}")
        chosen = tuple(visibility)
        unknown = [value for value in chosen if value not in VISIBILITIES]
        if not chosen or unknown or len(set(chosen)) != len(chosen):
            raise TypeError(f"tool {tool_name}: visibility lists 'model' and/or 'app' once each, got {list(chosen)!r}")
        return cls(resource_uri, tuple(value for value in VISIBILITIES if value in chosen))

    def to_meta(self) -> dict[str, Any]:
        ui: dict[str, Any] = {"resourceUri": self.resource_uri}
        if self.visibility is not None:
            ui["visibility"] = list(self.visibility)
        return ui


@dataclass(frozen=True)
class ResourceCsp:
    """The origins a view may reach beyond its own document (``_meta.ui.csp``); each empty list
    is the host's restrictive default. Field names as in the SDK's ``ResourceCsp``."""

    connect_domains: Sequence[str] = ()
    """``connect-src``: where ``fetch``, XHR and WebSockets may go."""
    resource_domains: Sequence[str] = ()
    """``script-src``, ``style-src``, ``img-src``, ``font-src``, ``media-src``: static assets."""
    frame_domains: Sequence[str] = ()
    """``frame-src``: nested iframes (none by default)."""
    base_uri_domains: Sequence[str] = ()
    """``base-uri``: what ``<base>`` may point at (the view's own origin by default)."""

    def __post_init__(self) -> None:
        for field_name in ("connect_domains", "resource_domains", "frame_domains", "base_uri_domains"):
            value = getattr(self, field_name)
            if isinstance(value, str) or not all(isinstance(origin, str) and origin for origin in value):
                raise TypeError(f"ResourceCsp.{field_name} is a list of origins, got {value!r}")
            object.__setattr__(self, field_name, tuple(value))  # a list given is kept as a tuple

    def to_meta(self) -> dict[str, list[str]]:
        wire = {
            "connectDomains": self.connect_domains,
            "resourceDomains": self.resource_domains,
            "frameDomains": self.frame_domains,
            "baseUriDomains": self.base_uri_domains,
        }
        return {key: list(origins) for key, origins in wire.items() if origins}


@dataclass(frozen=True)
class ResourcePermissions:
    """Browser permissions a view asks the host for (``_meta.ui.permissions``): requests, which
    the host may refuse (a view feature-detects rather than assumes a grant)."""

    camera: bool = False
    microphone: bool = False
    geolocation: bool = False
    clipboard_write: bool = False

    def to_meta(self) -> dict[str, dict[str, Any]]:
        wire = {
            "camera": self.camera,
            "microphone": self.microphone,
            "geolocation": self.geolocation,
            "clipboardWrite": self.clipboard_write,
        }
        return {key: {} for key, wanted in wire.items() if wanted}  # the spec's "requested" is {}


@dataclass(frozen=True)
class ResourceUi:
    """A view's ``_meta.ui``: how the host should sandbox and frame it."""

    csp: ResourceCsp | None = None
    permissions: ResourcePermissions | None = None
    domain: str | None = None
    """A dedicated sandbox origin; its format is the host's (see the host's documentation)."""
    prefers_border: bool | None = None
    """True: a visible border and background; False: none; None: the host decides."""

    def to_meta(self) -> dict[str, Any]:
        ui: dict[str, Any] = {}
        if self.csp is not None and self.csp.to_meta():
            ui["csp"] = self.csp.to_meta()
        if self.permissions is not None and self.permissions.to_meta():
            ui["permissions"] = self.permissions.to_meta()
        if self.domain is not None:
            ui["domain"] = self.domain
        if self.prefers_border is not None:
            ui["prefersBorder"] = self.prefers_border
        return ui


def app_mime_type(uri: str, given: str | None) -> str | None:
    """The MIME type a resource at ``uri`` is served with: a ``ui://`` resource is an app (a
    host renders no other type), so its type defaults to the app type and no other is taken."""
    if not is_ui_uri(uri):
        return given
    if given is not None and given != APP_MIME_TYPE:
        raise TypeError(f"resource {uri}: a ui:// resource is served as {APP_MIME_TYPE!r}, not {given!r}")
    return APP_MIME_TYPE


def check_views(tools: Mapping[str, str], views: Iterable[str]) -> None:
    """ValueError naming each tool (name -> ui:// URI) whose view no feature serves: a host would
    fetch it with ``resources/read`` and fail, so the server does not start."""
    served = set(views)
    missing = {name: uri for name, uri in sorted(tools.items()) if uri not in served}
    if missing:
        named = ", ".join(f"tool {name} names {uri}" for name, uri in missing.items())
        known = ", ".join(sorted(served)) or "none"
        raise ValueError(
            f"MCP Apps: {named}, which no feature module serves (declare it with @ui_resource; "
            f"ui:// resources served: {known})"
        )
