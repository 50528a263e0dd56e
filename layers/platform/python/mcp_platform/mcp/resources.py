"""Resources and resource templates: one module-level spec each, made with a decorator.

``@resource(uri=...)`` serves one fixed URI; ``@resource_template(uri_template=...)`` serves every
URI matching an RFC 6570 template (``{var}`` matches one path segment, ``{+var}`` may span
slashes), its variables passed to the function as keyword arguments. A read function returns
``str`` (text), ``bytes`` (a base64 blob), or a list of content dicts for full control.
Template variables may declare completers (``completion/complete`` with ``ref/resource``).
"""

from __future__ import annotations

import base64
import inspect
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

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
    function: ReadFunction
    description: str = ""
    title: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    cache: tuple[int, CacheScope] = NO_CACHE
    """2026-07-28 ``resources/read`` caching hints: (ttlMs, cacheScope)."""

    def describe(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"uri": self.uri, "name": self.name}
        _describe_common(entry, self.title, self.description, self.mime_type, self.annotations)
        return entry


@dataclass(frozen=True)
class ResourceTemplateSpec:
    uri_template: str
    name: str
    function: ReadFunction
    description: str = ""
    title: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    completions: Mapping[str, Completer] = field(default_factory=dict)
    cache: tuple[int, CacheScope] = NO_CACHE
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


def resource(
    *,
    uri: str,
    name: str | None = None,
    description: str = "",
    title: str | None = None,
    mime_type: str | None = None,
    annotations: dict[str, Any] | None = None,
    cache: tuple[int, CacheScope] = NO_CACHE,
) -> Callable[[ReadFunction], ResourceSpec]:
    def build(function: ReadFunction) -> ResourceSpec:
        _require_async(function)
        return ResourceSpec(
            uri, name or function.__name__, function, description, title, mime_type, annotations or {}, cache
        )

    return build


def resource_template(
    *,
    uri_template: str,
    name: str | None = None,
    description: str = "",
    title: str | None = None,
    mime_type: str | None = None,
    annotations: dict[str, Any] | None = None,
    completions: Mapping[str, Completer] | None = None,
    cache: tuple[int, CacheScope] = NO_CACHE,
) -> Callable[[ReadFunction], ResourceTemplateSpec]:
    def build(function: ReadFunction) -> ResourceTemplateSpec:
        _require_async(function)
        return ResourceTemplateSpec(
            uri_template,
            name or function.__name__,
            function,
            description,
            title,
            mime_type,
            annotations or {},
            dict(completions or {}),
            cache,
        )

    return build


def contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """A read function's return value as ``resources/read`` contents (never empty)."""
    if isinstance(value, str):
        return [{"uri": uri, "mimeType": mime_type or "text/plain", "text": value}]
    if isinstance(value, bytes | bytearray):
        blob = base64.b64encode(bytes(value)).decode()
        return [{"uri": uri, "mimeType": mime_type or "application/octet-stream", "blob": blob}]
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return [{"uri": uri, **item} for item in value]
    raise TypeError(f"resource {uri} read returned {type(value).__name__}; return str, bytes or content dicts")


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


def _require_async(function: Callable[..., Any]) -> None:
    if not inspect.iscoroutinefunction(function):
        raise TypeError(f"{function.__name__} must be an async function")


class ResourceNotFound(LookupError):
    """Raised by a read function when the URI matched but names nothing (e.g. an unknown id)."""
