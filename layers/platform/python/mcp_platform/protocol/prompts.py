"""Prompts: one decorated function each, made with ``@prompt`` (the decorator returns the
function, its spec attached).

Arguments come from the function's signature (``Annotated[T, "description"]``; a parameter
without a default is required). They arrive as strings (MCP prompt arguments are strings) and
reach the function converted to their declared types (``int``, ``bool``, an Enum...). The
description defaults to the docstring; the context parameter is the one annotated
``ToolContext`` (any name, or none); a plain ``def`` runs in a worker thread. The function
returns a ``str`` (one user text message), a message, or a list of messages
(``user(...)``/``assistant(...)`` with any content blocks, or strings). Arguments may declare
completers (``completion/complete`` with ``ref/prompt``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from mcp_platform.protocol.decorated import Decorated, attach, feature_description, feature_name
from mcp_platform.protocol.signature import Runner, Signature, signature_of, text_arguments

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
    function: Callable[..., Any]
    run: Runner
    """``run(ctx, **arguments)``: the prompt function called as the platform calls it."""
    arguments: tuple[PromptArgument, ...]
    description: str = ""
    title: str | None = None
    completions: Mapping[str, Completer] = field(default_factory=dict)
    parsers: Mapping[str, Callable[[str], Any]] = field(default_factory=dict)
    """Per argument whose declared type is not ``str``, the conversion of its text."""

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
        converted: dict[str, Any] = dict(arguments)
        for name, parse in self.parsers.items():
            if name in arguments:
                try:
                    converted[name] = parse(arguments[name])
                except ValueError as exc:
                    raise PromptArgumentError(f"prompt {self.name} argument {name}: {exc}") from exc
        return converted


@overload
def prompt(function: Decorated, /) -> Decorated: ...


@overload
def prompt(
    *,
    description: str | None = None,
    name: str | None = None,
    title: str | None = None,
    completions: Mapping[str, Completer] | None = None,
) -> Callable[[Decorated], Decorated]: ...


def prompt(
    function: Decorated | None = None,
    /,
    *,
    description: str | None = None,
    name: str | None = None,
    title: str | None = None,
    completions: Mapping[str, Completer] | None = None,
) -> Decorated | Callable[[Decorated], Decorated]:
    """Make a function a prompt: ``@prompt`` or ``@prompt(...)``; returns the function."""

    def build(function: Decorated) -> Decorated:
        prompt_name = feature_name(function, name, "prompt")
        signature = signature_of(function, untyped=str)  # the wire gives strings
        arguments = _arguments(signature)
        unknown = set(completions or {}) - {a.name for a in arguments}
        if unknown:
            raise TypeError(f"prompt {prompt_name}: completers for unknown arguments {sorted(unknown)}")
        spec = PromptSpec(
            name=prompt_name,
            function=function,
            run=signature.runner(),
            arguments=arguments,
            description=feature_description(function, description),
            title=title,
            completions=dict(completions or {}),
            parsers=text_arguments(signature),
        )
        return attach(function, spec)

    return build if function is None else build(function)


def _arguments(signature: Signature) -> tuple[PromptArgument, ...]:
    return tuple(
        PromptArgument(parameter.name, parameter.description or "", parameter.required)
        for parameter in signature.parameters
    )


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
    """A prompt function's return value as messages: a string or a content block is one user
    message, a message (a dict with a role) itself, and a list any number of these."""
    if isinstance(value, list | tuple) and value:
        return [_one_message(item) for item in value]
    return [_one_message(value)]


def _one_message(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return user(value)
    if isinstance(value, dict) and "role" in value:
        return value
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return user(value)  # a content block
    raise TypeError(f"prompt returned {type(value).__name__}; return str, messages or content blocks")
