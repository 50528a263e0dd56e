"""Prompts: one module-level spec each, made with ``@prompt``.

Arguments come from the function's signature (``Annotated[str, "description"]``; a parameter
without a default is required). The function returns a ``str`` (one user text message) or a
list of messages (``user(...)``/``assistant(...)`` with any content blocks). Arguments may
declare completers (``completion/complete`` with ``ref/prompt``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin, get_type_hints

PromptFunction = Callable[..., Awaitable[Any]]
Completer = Callable[..., Awaitable[list[str]]]


class PromptArgumentError(ValueError):
    """prompts/get with a missing required argument or one the prompt does not declare."""


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False

    def describe(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "required": self.required}
        if self.description:
            entry["description"] = self.description
        return entry


@dataclass(frozen=True)
class PromptSpec:
    name: str
    function: PromptFunction
    arguments: tuple[PromptArgument, ...]
    description: str = ""
    title: str | None = None
    completions: Mapping[str, Completer] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "arguments": [a.describe() for a in self.arguments]}
        if self.title:
            entry["title"] = self.title
        if self.description:
            entry["description"] = self.description
        return entry

    def bind(self, arguments: Mapping[str, Any]) -> dict[str, str]:
        declared = {a.name for a in self.arguments}
        unknown = sorted(set(arguments) - declared)
        if unknown:
            raise PromptArgumentError(f"prompt {self.name} has no argument(s) {', '.join(unknown)}")
        missing = [a.name for a in self.arguments if a.required and a.name not in arguments]
        if missing:
            raise PromptArgumentError(f"prompt {self.name} needs argument(s) {', '.join(missing)}")
        bad = [name for name, value in arguments.items() if not isinstance(value, str)]
        if bad:
            raise PromptArgumentError(f"prompt arguments are strings: {', '.join(bad)}")
        return dict(arguments)


def prompt(
    *,
    description: str = "",
    name: str | None = None,
    title: str | None = None,
    completions: Mapping[str, Completer] | None = None,
) -> Callable[[PromptFunction], PromptSpec]:
    def build(function: PromptFunction) -> PromptSpec:
        if not inspect.iscoroutinefunction(function):
            raise TypeError(f"prompt {function.__name__} must be an async function")
        arguments = _arguments(function)
        unknown = set(completions or {}) - {a.name for a in arguments}
        if unknown:
            raise TypeError(f"prompt {function.__name__}: completers for unknown arguments {sorted(unknown)}")
        return PromptSpec(name or function.__name__, function, arguments, description, title, dict(completions or {}))

    return build


def _arguments(function: PromptFunction) -> tuple[PromptArgument, ...]:
    hints = get_type_hints(function, include_extras=True)
    found = []
    for parameter in list(inspect.signature(function).parameters.values())[1:]:  # after ctx
        hint = hints.get(parameter.name, str)
        description = ""
        if get_origin(hint) is Annotated:
            hint, *extras = get_args(hint)
            description = next((extra for extra in extras if isinstance(extra, str)), "")
        if hint is not str:
            raise TypeError(f"prompt argument {parameter.name} must be a str (MCP prompt arguments are strings)")
        found.append(PromptArgument(parameter.name, description, parameter.default is inspect.Parameter.empty))
    return tuple(found)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(*content: dict[str, Any] | str) -> dict[str, Any]:
    return _message("user", content)


def assistant(*content: dict[str, Any] | str) -> dict[str, Any]:
    return _message("assistant", content)


def _message(role: str, content: tuple[dict[str, Any] | str, ...]) -> dict[str, Any]:
    if len(content) != 1:
        raise ValueError("a prompt message holds exactly one content block")
    block = content[0]
    return {"role": role, "content": text(block) if isinstance(block, str) else block}


def messages(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [user(value)]
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        return value
    raise TypeError(f"prompt returned {type(value).__name__}; return str or a list of messages")
