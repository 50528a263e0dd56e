"""What the feature decorators share: they return the function itself, still callable (a unit
test calls it directly), with its spec attached; discovery reads the spec back.

Nothing registers itself: :meth:`mcp.catalog.Catalog.discover` finds the decorated functions of
a features package, so a module may import another's tool without registering it twice.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

SPEC_ATTRIBUTE = "__mcp_spec__"
Decorated = TypeVar("Decorated", bound=Callable[..., Any])


def attach(function: Decorated, spec: object) -> Decorated:
    """``function`` with ``spec`` attached (a second decoration replaces the first)."""
    setattr(function, SPEC_ATTRIBUTE, spec)
    return function


def attached(value: object) -> object | None:
    """The spec a decorator attached to ``value``, else None (read from the instance's own
    namespace: an object answering every attribute, a mock or a proxy, is not a feature)."""
    namespace = getattr(value, "__dict__", None)
    return namespace.get(SPEC_ATTRIBUTE) if isinstance(namespace, dict) else None


def feature_name(function: Callable[..., Any], given: str | None, kind: str) -> str:
    name = given or getattr(function, "__name__", "")
    if not name or name == "<lambda>":
        raise TypeError(f"a {kind} made from a lambda needs name=...")
    return name


def feature_description(function: Callable[..., Any], given: str | None) -> str:
    """The description given, else the function's docstring (cleaned of its indentation)."""
    if given is not None:
        return given
    return inspect.getdoc(function) or ""


def defined_at(function: Callable[..., Any]) -> str:
    """Where a feature function is defined (``module.qualname``), for messages that name it."""
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"
