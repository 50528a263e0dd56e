"""`make dev` reloads the features folder (local/reload.py), end to end.

The platform runs as `python -m local` (tests/support/local_platform.py) with MCP_FEATURES_DIR
pointed at a temporary copy of the platform's own tools (tests/support/platform_tools), so the
test can add, edit, break and delete feature modules while one 2025 transport session and one
session handle stay open across every reload: the emulator's data and the sessions it holds
must outlive them all.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_platform.protocol.tasks import EXTENSION_ID
from tests.support.features import PLATFORM_TOOLS_DIR
from tests.support.interactive import modern_meta
from tests.support.local_platform import LocalPlatform, local_platform, wait_for
from tests.support.mcp_http import final_message, modern_call

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_platform")]
RELOAD_DEADLINE_S = 10.0  # "within a few seconds": the default poll is 0.5 s
T = TypeVar("T")


@pytest.fixture(scope="module")
def features_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("features") / "mcp_tools"
    shutil.copytree(PLATFORM_TOOLS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, features_dir: Path) -> Iterator[LocalPlatform]:
    with local_platform(tmp_path_factory.mktemp("local"), env={"MCP_FEATURES_DIR": str(features_dir)}) as running:
        yield running


def probe_tool(name: str, answer: str, *, task: str = "forbidden") -> str:
    """A feature module with one tool that answers a fixed text (``task``: its task support)."""
    return f'''"""Written by the reload test."""

from __future__ import annotations

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool


@tool(name="{name}", description="Answers a fixed text (reload test).", task="{task}")
async def {name}(ctx: ToolContext) -> str:
    return "{answer}"
'''


async def eventually(probe: Callable[[], Awaitable[T | None]], what: str) -> tuple[T, float]:
    """The probe's first truthy answer within RELOAD_DEADLINE_S, and how long it took."""
    started = time.monotonic()
    while True:
        found = await probe()
        elapsed = time.monotonic() - started
        if found:
            return found, elapsed
        if elapsed > RELOAD_DEADLINE_S:
            raise AssertionError(f"timed out after {RELOAD_DEADLINE_S} s waiting for {what}")
        await anyio.sleep(0.1)


def log_lines(platform: LocalPlatform, marker: str) -> list[str]:
    return [line for line in platform.log_path.read_text().splitlines() if marker in line]


def test_features_folder_changes_reload_the_endpoint_and_keep_the_sessions(
    platform: LocalPlatform, features_dir: Path
) -> None:
    """Given a 2025 transport session and a session handle with a note, when a tool module is
    added, edited, broken by a second module that fails to import, then removed, then each change
    is served within a few seconds on the same transport session, the broken module is logged
    with its traceback while the previous tools keep serving, and the note written before the
    first reload is still in the session (the emulator's table outlived every reload)."""
    tool_name = f"reload_probe_{uuid.uuid4().hex[:6]}"
    module = features_dir / f"{tool_name}.py"
    broken = features_dir / "broken_on_purpose.py"
    note = f"before-reload-{uuid.uuid4().hex[:8]}"
    timings: dict[str, float] = {}

    async def drive() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=30)
        async with Client(streamable_http_client(platform.mcp_url, http_client=http), mode="legacy") as session:
            handle = (await session.call_tool("open_session", {})).structured_content["session"]
            appended = await session.call_tool("append_note", {"text": note, "session": handle})
            assert not appended.is_error, appended
            tools_before = {tool.name for tool in (await session.list_tools()).tools}

            async def listed() -> set[str]:
                return {tool.name for tool in (await session.list_tools()).tools}

            async def answer() -> str:
                result = await session.call_tool(tool_name, {})
                return "" if result.is_error else str(result.content[0].model_dump().get("text"))

            async def note_still_there() -> None:
                notes = await session.call_tool("read_notes", {"session": handle})
                assert not notes.is_error, notes
                assert note in str(notes.structured_content), notes.structured_content

            # When a module is added: it is listed and answers, on the same transport session.
            module.write_text(probe_tool(tool_name, "first answer"))
            _, timings["added"] = await eventually(lambda: _has(listed, tool_name), f"{tool_name} in tools/list")
            assert await answer() == "first answer"
            assert await listed() == tools_before | {tool_name}
            await note_still_there()

            # When it is edited (same length, likely within the same second: stale bytecode must
            # not be served): the new behaviour.
            module.write_text(probe_tool(tool_name, "other answer"))
            _, timings["edited"] = await eventually(lambda: _equals(answer, "other answer"), "the edited answer")

            # When a module that fails to import appears: an error with its traceback is logged and
            # the previous tools keep serving.
            broken.write_text('raise RuntimeError("this module is broken on purpose")\n')
            _, timings["broken"] = await eventually(
                lambda: _lines(platform, "broken_on_purpose.py"), "the reload failure in the log"
            )
            assert await listed() == tools_before | {tool_name}
            assert await answer() == "other answer"
            await note_still_there()

            # When the broken module and then the tool's module are deleted: the tool disappears.
            broken.unlink()
            module.unlink()
            _, timings["deleted"] = await eventually(lambda: _lacks(listed, tool_name), f"{tool_name} gone")
            assert await listed() == tools_before
            with pytest.raises(MCPError, match="Unknown tool"):
                await session.call_tool(tool_name, {})
            await note_still_there()

    anyio.run(drive)
    log = platform.log_path.read_text()
    assert "this module is broken on purpose" in log, "the failing module's traceback is logged"
    assert "Traceback (most recent call last)" in log
    reloads = log_lines(platform, "reload:")
    assert any(f"added {tool_name}.py" in line and " tools" in line for line in reloads), reloads
    assert any("still serving the previous features" in line for line in reloads), reloads
    print("reload seen after (s): " + ", ".join(f"{step} {seconds:.2f}" for step, seconds in timings.items()))


def listed(url: str, key: str) -> set[str]:
    """tools/list in the 2026 era (stateless: one request, no session)."""
    answer = final_message(modern_call(url, key, 1, "tools/list", {"_meta": modern_meta()}))
    return {tool["name"] for tool in answer["result"]["tools"]}


def serves_tool(running: LocalPlatform, name: str) -> bool:
    return name in listed(running.mcp_url, running.api_key)


async def _has(listed: Callable[[], Awaitable[set[str]]], name: str) -> bool:
    return name in await listed()


async def _lacks(listed: Callable[[], Awaitable[set[str]]], name: str) -> bool:
    return name not in await listed()


async def _equals(answer: Callable[[], Awaitable[str]], expected: str) -> bool:
    return await answer() == expected


async def _lines(platform: LocalPlatform, marker: str) -> list[str]:
    return log_lines(platform, marker)


def test_a_task_runs_the_reloaded_tool_in_the_local_task_worker(platform: LocalPlatform, features_dir: Path) -> None:
    """Given a tool that runs only as a task, added and then edited in the features folder, when
    it is called as a task (2026 era, tasks extension), then the local task worker, fed by the
    emulator's queue, runs the module as last saved: the worker's handlers are reloaded with the
    endpoint's."""
    tool_name = f"reload_task_{uuid.uuid4().hex[:6]}"
    module = features_dir / f"{tool_name}.py"

    def run_as_task() -> dict[str, Any]:
        meta = modern_meta({"extensions": {EXTENSION_ID: {}}})
        params = {"name": tool_name, "arguments": {}, "_meta": meta}
        created = final_message(modern_call(platform.mcp_url, platform.api_key, 1, "tools/call", params))
        assert created.get("result", {}).get("resultType") == "task", created
        task_id = created["result"]["taskId"]

        def finished() -> dict[str, Any] | None:
            params = {"taskId": task_id, "_meta": meta}
            found = final_message(modern_call(platform.mcp_url, platform.api_key, 2, "tasks/get", params))["result"]
            return found if found["status"] in ("completed", "failed", "cancelled") else None

        return wait_for(finished, RELOAD_DEADLINE_S, f"task {task_id} to finish")

    try:
        module.write_text(probe_tool(tool_name, "first answer", task="required"))
        wait_for(partial(serves_tool, platform, tool_name), RELOAD_DEADLINE_S, f"{tool_name} in tools/list")
        first = run_as_task()
        assert first["status"] == "completed", first
        assert first["result"]["content"][0]["text"] == "first answer"

        module.write_text(probe_tool(tool_name, "other answer", task="required"))
        wait_for(lambda: "other answer" in str(run_as_task()), 2 * RELOAD_DEADLINE_S, "the edited answer from a task")
    finally:
        module.unlink(missing_ok=True)
    wait_for(lambda: not serves_tool(platform, tool_name), RELOAD_DEADLINE_S, "its removal")


def test_an_attached_second_endpoint_reloads_the_same_features_folder(
    platform: LocalPlatform, features_dir: Path, tmp_path: Path
) -> None:
    """Given `python -m local --attach` on the running platform's emulator and features folder,
    when a tool module is added, then both endpoints serve it within a few seconds, and a session
    handle opened on the first endpoint works on the second (one table behind both)."""
    tool_name = f"reload_attached_{uuid.uuid4().hex[:6]}"
    module = features_dir / f"{tool_name}.py"
    aws_port = platform.aws_url.rsplit(":", 1)[1]
    env = {"MCP_FEATURES_DIR": str(features_dir), "LOCAL_AWS_PORT": aws_port}

    def call(url: str, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments, "_meta": modern_meta()}
        result: dict[str, Any] = final_message(modern_call(url, key, 2, "tools/call", params))["result"]
        return result

    with local_platform(tmp_path, env=env, args=["--attach"]) as second:
        try:
            module.write_text(probe_tool(tool_name, "attached answer"))
            for running in (platform, second):
                serves = partial(serves_tool, running, tool_name)
                wait_for(serves, RELOAD_DEADLINE_S, f"{tool_name} on {running.mcp_url}")
                answer = call(running.mcp_url, running.api_key, tool_name, {})
                assert answer["content"][0]["text"] == "attached answer", answer
        finally:
            module.unlink(missing_ok=True)
        handle = call(platform.mcp_url, platform.api_key, "open_session", {})["structuredContent"]["session"]
        info = call(second.mcp_url, second.api_key, "session_info", {"session": handle})
        assert not info.get("isError"), info
        wait_for(lambda: not serves_tool(second, tool_name), RELOAD_DEADLINE_S, "its removal")
