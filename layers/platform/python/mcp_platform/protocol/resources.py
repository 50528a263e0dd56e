"""Resources and resource templates: one decorated function each (the decorator returns the
function, its spec attached).

``@resource("uri")`` serves one fixed URI; ``@resource_template("uri-template")`` (or
``@resource`` with a URI that has variables, as the SDK decides) serves every URI matching an
RFC 6570 template (``{var}`` matches one path segment, ``{+var}`` may span slashes), its
variables passed to the function as keyword arguments, converted to their declared types
(``int``, an Enum...). The description defaults to the docstring; the context parameter is the
one annotated ``ToolContext`` (any name, or none); a plain ``def`` runs in a worker thread. A read
function returns ``str`` (text), ``bytes`` (a base64 blob), a list of content dicts for full
control, or other JSON data (a dict, a dataclass, a model: JSON text). Template variables may
declare completers (``completion/complete`` with ``ref/resource``).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_platform.protocol.apps import (
    APP_MIME_TYPE,
    ResourceCsp,
    ResourcePermissions,
    ResourceUi,
    app_mime_type,
    is_ui_uri,
    require_ui_uri,
)
from mcp_platform.protocol.decorated import Decorated, attach, feature_description, feature_name
from mcp_platform.protocol.signature import Runner, signature_of, text_arguments

ReadFunction = Callable[..., Awaitable[Any]]
Completer = Callable[..., Awaitable[list[str]]]
_VARIABLE = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")
CacheScope = Literal["private", "public"]
# Safe default: per-caller data that may change at any time (a resource may declare longer).
NO_CACHE: tuple[int, CacheScope] = (0, "private")


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    function: Callable[..., Any]
    run: Runner
    """``run(ctx)``: the read function called as the platform calls it."""
    description: str = ""
    title: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    cache: tuple[int, CacheScope] = NO_CACHE
    """2026-07-28 ``resources/read`` caching hints: (ttlMs, cacheScope)."""
    ui: ResourceUi | None = None
    """MCP Apps: how a host sandboxes this ``ui://`` view (``_meta.ui``, listed and read)."""

    @property
    def meta(self) -> dict[str, Any] | None:
        """The ``_meta`` of its listing and of its read contents (the spec reads it from either)."""
        ui = self.ui.to_meta() if self.ui is not None else {}
        return {"ui": ui} if ui else None

    @property
    def is_view(self) -> bool:
        """An MCP Apps view: a ``ui://`` resource (served as the app MIME type)."""
        return self.mime_type == APP_MIME_TYPE and is_ui_uri(self.uri)

    def describe(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"uri": self.uri, "name": self.name}
        _describe_common(entry, self.title, self.description, self.mime_type, self.annotations)
        if self.meta is not None:
            entry["_meta"] = self.meta
        return entry

    def contents(self, value: Any) -> list[dict[str, Any]]:
        """What its read function returned as ``resources/read`` contents."""
        return contents(self.uri, value, self.mime_type, self.meta)


@dataclass(frozen=True)
class ResourceTemplateSpec:
    uri_template: str
    name: str
    function: Callable[..., Any]
    run: Runner
    """``run(ctx, **arguments)``: the read function called as the platform calls it."""
    description: str = ""
    title: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    completions: Mapping[str, Completer] = field(default_factory=dict)
    cache: tuple[int, CacheScope] = NO_CACHE
    parsers: Mapping[str, Callable[[str], Any]] = field(default_factory=dict)
    """Per variable whose declared type is not ``str``, the conversion of its text."""
    pattern: re.Pattern[str] = field(init=False, compare=False, repr=False)
    variables: tuple[str, ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        pattern, variables = compile_template(self.uri_template)
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "variables", variables)
        unknown = set(self.completions) - set(variables)
        if unknown:
            raise TypeError(f"template {self.name}: completers for unknown variables {sorted(unknown)}")

    def match(self, uri: str) -> dict[str, str] | None:
        found = self.pattern.fullmatch(uri)
        if found is None:
            return None
        return {name: urllib.parse.unquote(value) for name, value in found.groupdict().items()}

    def arguments(self, variables: Mapping[str, str]) -> dict[str, Any]:
        """The matched variables in their declared types; InvalidResourceUri names a variable
        whose text its type refuses."""
        converted: dict[str, Any] = dict(variables)
        for name, parse in self.parsers.items():
            try:
                converted[name] = parse(variables[name])
            except ValueError as exc:
                raise InvalidResourceUri(f"{{{name}}}: {exc}") from exc
        return converted

    def describe(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"uriTemplate": self.uri_template, "name": self.name}
        _describe_common(entry, self.title, self.description, self.mime_type, self.annotations)
        return entry


def compile_template(template: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """RFC 6570 levels 1-2 (``{var}``, ``{+var}``) as an anchored regex with named groups."""
    parts: list[str] = []
    names: list[str] = []
    position = 0
    for found in _VARIABLE.finditer(template):
        parts.append(re.escape(template[position : found.start()]))
        reserved, name = found.groups()
        if name in names:
            raise TypeError(f"template {template!r} repeats variable {name!r}")
        names.append(name)
        parts.append(f"(?P<{name}>{'.+?' if reserved else '[^/?#]+'})")
        position = found.end()
    parts.append(re.escape(template[position:]))
    if not names:
        raise TypeError(f"template {template!r} has no variables: declare it with @resource")
    return re.compile("".join(parts)), tuple(names)


def expand_template(template: str, variables: Mapping[str, str]) -> str:
    """The URI a template names with ``variables`` (percent-encoded; ``{+var}`` keeps slashes)."""
    return _VARIABLE.sub(
        lambda found: urllib.parse.quote(variables[found.group(2)], safe="/" if found.group(1) else ""), template
    )


def resource(
    uri: str,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    mime_type: str | None = None,
    annotations: dict[str, Any] | None = None,
    cache: tuple[int, CacheScope] = NO_CACHE,
    completions: Mapping[str, Completer] | None = None,
) -> Callable[[Decorated], Decorated]:
    """Serve the function's return value at ``uri``; a URI with ``{variables}`` makes it a
    template (:func:`resource_template`), as the SDK's ``@resource`` does."""
    if callable(uri):
        raise TypeError("@resource needs its URI: write @resource('scheme://...')")
    if _VARIABLE.search(uri):
        return resource_template(
            uri,
            name=name,
            description=description,
            title=title,
            mime_type=mime_type,
            annotations=annotations,
            completions=completions,
            cache=cache,
        )
    if completions:
        raise TypeError(f"resource {uri}: completions apply to template variables; {uri} has none")
    return _fixed_resource(
        uri,
        name=name,
        description=description,
        title=title,
        mime_type=app_mime_type(uri, mime_type),
        annotations=annotations,
        cache=cache,
        ui=None,
    )


def ui_resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    csp: ResourceCsp | None = None,
    permissions: ResourcePermissions | None = None,
    domain: str | None = None,
    prefers_border: bool | None = None,
    cache: tuple[int, CacheScope] = NO_CACHE,
) -> Callable[[Decorated], Decorated]:
    """Serve the HTML the function returns as the MCP Apps view at ``uri`` (``ui://...``): a
    ``text/html;profile=mcp-app`` resource a tool names with ``@tool(ui=uri)``. ``csp``,
    ``permissions``, ``domain`` and ``prefers_border`` are its ``_meta.ui`` (as the SDK's
    ``add_html_resource`` takes them): what the host builds the iframe's sandbox from. The
    function returns the document (``str``, or ``bytes`` served as a base64 blob)."""
    if callable(uri):
        raise TypeError("@ui_resource needs its URI: write @ui_resource('ui://app/view.html')")
    require_ui_uri(uri, "@ui_resource")
    if _VARIABLE.search(uri):
        raise TypeError(f"@ui_resource {uri}: a view is one fixed resource, its URI has no variables")
    if csp is not None and not isinstance(csp, ResourceCsp):
        raise TypeError(f"@ui_resource {uri}: csp is a ResourceCsp(connect_domains=[...], ...)")
    if permissions is not None and not isinstance(permissions, ResourcePermissions):
        raise TypeError(f"@ui_resource {uri}: permissions is a ResourcePermissions(camera=True, ...)")
    ui = ResourceUi(csp=csp, permissions=permissions, domain=domain, prefers_border=prefers_border)
    return _fixed_resource(
        uri,
        name=name,
        description=description,
        title=title,
        mime_type=APP_MIME_TYPE,
        annotations=None,
        cache=cache,
        ui=ui,
    )


def _fixed_resource(
    uri: str,
    *,
    name: str | None,
    description: str | None,
    title: str | None,
    mime_type: str | None,
    annotations: dict[str, Any] | None,
    cache: tuple[int, CacheScope],
    ui: ResourceUi | None,
) -> Callable[[Decorated], Decorated]:
    def build(function: Decorated) -> Decorated:
        signature = signature_of(function, untyped=str)  # the wire gives strings
        if signature.parameters:
            unexpected = [parameter.name for parameter in signature.parameters]
            raise TypeError(f"resource {uri} has no URI variables, but its function takes {unexpected}")
        spec = ResourceSpec(
            uri=uri,
            name=feature_name(function, name, "resource"),
            function=function,
            run=signature.runner(),
            description=feature_description(function, description),
            title=title,
            mime_type=mime_type,
            annotations=annotations or {},
            cache=cache,
            ui=ui,
        )
        return attach(function, spec)

    return build


def resource_template(
    uri_template: str,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    mime_type: str | None = None,
    annotations: dict[str, Any] | None = None,
    completions: Mapping[str, Completer] | None = None,
    cache: tuple[int, CacheScope] = NO_CACHE,
) -> Callable[[Decorated], Decorated]:
    """Serve every URI matching ``uri_template``; its variables are the function's arguments."""
    if callable(uri_template):
        raise TypeError("@resource_template needs its URI template: write @resource_template('scheme://{id}')")
    if is_ui_uri(uri_template):  # a tool names one view; hosts fetch and review it up front
        raise TypeError(f"template {uri_template}: an MCP Apps view is one fixed resource (@ui_resource)")

    def build(function: Decorated) -> Decorated:
        signature = signature_of(function, untyped=str)  # the wire gives strings
        _, variables = compile_template(uri_template)
        parameters = {parameter.name for parameter in signature.parameters}
        if parameters != set(variables):
            raise TypeError(
                f"template {uri_template}: its variables {sorted(variables)} must be the function's "
                f"arguments, which are {sorted(parameters)}"
            )
        spec = ResourceTemplateSpec(
            uri_template=uri_template,
            name=feature_name(function, name, "resource template"),
            function=function,
            run=signature.runner(),
            description=feature_description(function, description),
            title=title,
            mime_type=mime_type,
            annotations=annotations or {},
            completions=dict(completions or {}),
            cache=cache,
            parsers=text_arguments(signature),
        )
        return attach(function, spec)

    return build


def contents(uri: str, value: Any, mime_type: str | None, meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A read function's return value as ``resources/read`` contents (never empty), each with
    ``meta`` as its ``_meta`` when given."""
    if meta is not None:
        return [{**item, "_meta": meta} for item in contents(uri, value, mime_type)]
    if mime_type == APP_MIME_TYPE and not isinstance(value, str | bytes | bytearray):
        raise TypeError(f"resource {uri}: a view's read returns its HTML (str or bytes), not {type(value).__name__}")
    if isinstance(value, str):
        return [{"uri": uri, "mimeType": mime_type or "text/plain", "text": value}]
    if isinstance(value, bytes | bytearray):
        blob = base64.b64encode(bytes(value)).decode()
        return [{"uri": uri, "mimeType": mime_type or "application/octet-stream", "blob": blob}]
    if isinstance(value, list) and value and all(isinstance(item, dict) and _is_content(item) for item in value):
        return [{"uri": uri, **item} for item in value]
    from mcp_platform.protocol.conversion import jsonable  # values beyond text and bytes: loaded on first use

    try:
        data = jsonable(value)
    except TypeError as exc:
        raise TypeError(f"resource {uri} read returned {type(value).__name__}, which has no JSON form") from exc
    text = json.dumps(data, separators=(",", ":"))
    return [{"uri": uri, "mimeType": mime_type or "application/json", "text": text}]


def _is_content(item: dict[str, Any]) -> bool:
    """A resource contents entry (text or blob) rather than data to serve as JSON."""
    return isinstance(item.get("text"), str) or isinstance(item.get("blob"), str)


def _describe_common(
    entry: dict[str, Any], title: str | None, description: str, mime_type: str | None, annotations: dict[str, Any]
) -> None:
    if title:
        entry["title"] = title
    if description:
        entry["description"] = description
    if mime_type:
        entry["mimeType"] = mime_type
    if annotations:
        entry["annotations"] = annotations


class ResourceNotFound(LookupError):
    """Raised by a read function when the URI matched but names nothing (e.g. an unknown id)."""


class InvalidResourceUri(ValueError):
    """The URI matched a template, but a variable's text is not of its declared type."""
