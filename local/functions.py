"""Runs the stream functions' own handler modules in this process, as Lambda would.

Each handler module builds its clients and settings at import (module scope, warm reuse), so
it is imported with that function's environment in place; the process environment is
restored afterwards. The handler named in the template is the one that runs.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from local.resources import FunctionSpec

if TYPE_CHECKING:
    from mcp_platform.bootstrap.worker import TaskHandler

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass
class LambdaContext:
    """The attributes of Lambda's context object that handlers read."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    timeout_s: int
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = "local"
    _started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.log_group_name = self.log_group_name or f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._started + self.timeout_s - time.monotonic()) * 1000))


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def resolve_handler(spec: FunctionSpec, env: Mapping[str, str]) -> Handler:
    """Imports the handler module under the function's environment and returns the handler
    the template names; a name the module lacks fails here, as Lambda would fail it with
    Runtime.HandlerNotFound."""
    module_name, _, attribute = spec.handler.rpartition(".")
    with environment(env):
        module = importlib.import_module(module_name)
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise ImportError(f"{spec.logical_id}: handler {spec.handler} not found in {module.__file__}")
    return cast(Handler, handler)


def invoker(handler: Handler, spec: FunctionSpec, function_arn: str) -> Callable[[dict[str, Any]], Any]:
    """One call = one invocation, with a fresh context (request id, deadline) each time."""

    def invoke(event: dict[str, Any]) -> Any:
        context = LambdaContext(spec.name, function_arn, spec.memory_mb, spec.timeout_s)
        return handler(event, context)

    return invoke


def handler_factory(spec: FunctionSpec, env: Mapping[str, str], *packages: Any) -> Callable[..., TaskHandler]:
    """The task worker: builds one handler per local execution environment, each with its own
    warm state, through the composition root its handler module calls at import, serving the
    given feature packages (the fixture packs of the local endpoint too); ``clients`` (AWS
    clients by service) are handed to the composition root, which builds defaults otherwise."""
    from mcp_platform.bootstrap.worker import build_handler
    from mcp_platform.config import Settings

    resolve_handler(spec, env)  # the module the template names must load, as Lambda would load it
    settings = Settings.from_mapping(env)

    def new_handler(**clients: Any) -> TaskHandler:
        with environment(env):
            return build_handler(settings, *packages, **clients)

    return new_handler
