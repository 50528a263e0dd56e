"""Reloading the features folder (local/reload.py): what changed, a fresh import each time, the
last good build kept when a module fails, and the app swap that lets requests in flight finish."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from local.bootstrap import DEFAULT_FEATURES_DIR, LocalOptions
from local.reload import (
    FEATURES_PACKAGE,
    Changes,
    FeatureReloader,
    ReloadableHandler,
    Served,
    SwappableApp,
    file_stamps,
    forget_features,
    load_features,
    restore_features,
    stamps_of,
)
from mcp_platform.protocol.catalog import Catalog

A_WHOLE_SECOND_NS = 1_700_000_000 * 10**9  # bytecode records the source's mtime in whole seconds


def tool_module(name: str, answer: str) -> str:
    return f'''from __future__ import annotations

from mcp_platform.protocol.tools import tool


@tool(description="Answers a fixed text.")
async def {name}(ctx: object) -> str:
    return "{answer}"
'''


@pytest.fixture
def features(tmp_path: Path) -> Iterator[Path]:
    """An empty features package; whatever the process had imported as the features package is
    put back afterwards."""
    directory = tmp_path / "features"
    directory.mkdir()
    (directory / "__init__.py").write_text('"""Features under test."""\n')
    saved = forget_features()
    yield directory
    restore_features(saved)


@dataclass
class Rebuilds:
    """The rebuild a reloader runs: discovers the catalog, as the endpoint's composition root does."""

    catalogs: list[Catalog] = field(default_factory=list)

    def __call__(self, package: ModuleType) -> Catalog:
        catalog = Catalog.discover(package)
        self.catalogs.append(catalog)
        return catalog

    def answer(self, tool_name: str) -> str:
        spec = self.catalogs[-1].tools.get(tool_name)
        assert spec is not None, f"{tool_name} is not served"
        return str(asyncio.run(spec.function(None)))  # type: ignore[arg-type]


def reloader(features: Path, rebuilds: Rebuilds) -> FeatureReloader:
    """A reloader serving the folder as it is now (its first build done, as at start-up)."""
    served = file_stamps(features)
    rebuilds(load_features(features))
    return FeatureReloader(features, rebuilds, served=served, interval_s=0.01, stop=threading.Event())


# -- what changed ---------------------------------------------------------------------------------
def test_changes_name_the_added_changed_and_deleted_files() -> None:
    before = {"a.py": (1, 10), "b.py": (1, 10), "c.py": (1, 10)}
    after = {"a.py": (1, 10), "b.py": (2, 10), "d.py": (1, 5)}
    changes = Changes.between(before, after)
    assert changes == Changes(added=("d.py",), changed=("b.py",), deleted=("c.py",))
    assert str(changes) == "added d.py; changed b.py; deleted c.py"
    assert not Changes.between(before, dict(before))


def test_file_stamps_skip_bytecode_caches_and_see_subfolders(features: Path) -> None:
    (features / "__pycache__").mkdir()
    (features / "__pycache__" / "stale.py").write_text("")
    (features / "helpers").mkdir()
    (features / "helpers" / "shared.py").write_text("X = 1\n")
    assert sorted(file_stamps(features)) == ["__init__.py", "helpers/shared.py"]


def test_served_counts_each_kind_of_feature() -> None:
    assert str(Served(tools=1, resources=0, templates=2, prompts=1)) == (
        "1 tool, 0 resources, 2 resource templates, 1 prompt"
    )


# -- settings -------------------------------------------------------------------------------------
def test_the_features_folder_and_the_reload_interval_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, features: Path
) -> None:
    monkeypatch.delenv("MCP_FEATURES_DIR", raising=False)
    monkeypatch.delenv("LOCAL_RELOAD_SECONDS", raising=False)
    defaults = LocalOptions.from_env(attach=False)
    assert (defaults.features_dir, defaults.reload_s) == (DEFAULT_FEATURES_DIR, 0.5)
    monkeypatch.setenv("MCP_FEATURES_DIR", str(features))
    monkeypatch.setenv("LOCAL_RELOAD_SECONDS", "0")
    chosen = LocalOptions.from_env(attach=True)
    assert (chosen.features_dir, chosen.reload_s) == (features.resolve(), 0.0)


def test_a_features_folder_that_is_not_a_package_stops_start_up_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MCP_FEATURES_DIR", str(tmp_path))  # no __init__.py
    with pytest.raises(SystemExit, match="MCP_FEATURES_DIR must be a package folder"):
        LocalOptions.from_env(attach=False)


# -- reloading ------------------------------------------------------------------------------------
def test_an_added_module_is_served_after_one_settled_look(features: Path) -> None:
    # Given a reloader serving an empty folder
    rebuilds = Rebuilds()
    watcher = reloader(features, rebuilds)
    # When a module is added
    (features / "probe.py").write_text(tool_module("probe", "one"))
    changes = watcher.check()
    # Then the rebuilt catalog serves it; the next look finds nothing new
    assert changes == Changes(added=("probe.py",))
    assert rebuilds.catalogs[-1].tools.names() == ["probe"]
    assert rebuilds.answer("probe") == "one"
    assert not watcher.check()
    assert len(rebuilds.catalogs) == 2


class WritesWhileWaiting(threading.Event):
    """The reloader's stop event, whose first wait (the pause between two looks) writes a file."""

    def __init__(self, write: Callable[[], object]) -> None:
        super().__init__()
        self._writes = [write]

    def wait(self, timeout: float | None = None) -> bool:
        while self._writes:
            self._writes.pop()()
        return False


def test_a_file_still_being_written_is_reloaded_once_it_settles(features: Path) -> None:
    # Given a module added, and written again between the reloader's two looks
    probe = features / "probe.py"
    served = file_stamps(features)
    rebuilds = Rebuilds()
    rebuilds(load_features(features))
    stop = WritesWhileWaiting(lambda: probe.write_text(tool_module("probe", "one, then more")))
    watcher = FeatureReloader(features, rebuilds, served=served, interval_s=0.01, stop=stop)
    probe.write_text(tool_module("probe", "one"))
    # When the reloader looks: nothing is built from the half-written state
    assert not watcher.check()
    assert len(rebuilds.catalogs) == 1
    # Then the next look, the file now settled, builds its final content once
    assert watcher.check() == Changes(added=("probe.py",))
    assert rebuilds.answer("probe") == "one, then more"
    assert len(rebuilds.catalogs) == 2


def test_an_edit_of_the_same_size_within_the_same_second_serves_the_new_code(
    features: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a module imported (its bytecode cached, as by default) with an mtime on a whole second
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    probe = features / "probe.py"
    probe.write_text(tool_module("probe", "old"))
    os.utime(probe, ns=(A_WHOLE_SECOND_NS, A_WHOLE_SECOND_NS))
    rebuilds = Rebuilds()
    watcher = reloader(features, rebuilds)
    assert rebuilds.answer("probe") == "old"
    # When it is rewritten with the same size, 1 microsecond later
    probe.write_text(tool_module("probe", "new"))
    os.utime(probe, ns=(A_WHOLE_SECOND_NS + 1000, A_WHOLE_SECOND_NS + 1000))
    assert watcher.check() == Changes(changed=("probe.py",))
    # Then the new code runs, not the cached bytecode of the old
    assert rebuilds.answer("probe") == "new"


def test_a_module_that_fails_to_import_keeps_the_last_good_build(
    features: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a reloader serving one tool
    (features / "probe.py").write_text(tool_module("probe", "good"))
    rebuilds = Rebuilds()
    watcher = reloader(features, rebuilds)
    served_module = sys.modules[f"{FEATURES_PACKAGE}.probe"]
    # When a module that raises at import is added
    (features / "broken.py").write_text('raise RuntimeError("broken on purpose")\n')
    with caplog.at_level(logging.INFO, logger="local.reload"):
        watcher.check()
    # Then the failure is logged with its traceback, nothing new was built, and the modules
    # imported are the ones still served
    failure = next(r for r in caplog.records if r.levelno == logging.ERROR)
    assert "added broken.py -> failed, still serving the previous features" in failure.getMessage()
    assert failure.exc_info is not None and "broken on purpose" in str(failure.exc_info[1])
    assert len(rebuilds.catalogs) == 1
    assert sys.modules[f"{FEATURES_PACKAGE}.probe"] is served_module
    assert f"{FEATURES_PACKAGE}.broken" not in sys.modules
    # and it is not retried until the folder changes again; deleting it reloads
    assert not watcher.check()
    (features / "broken.py").unlink()
    assert watcher.check() == Changes(deleted=("broken.py",))
    assert rebuilds.catalogs[-1].tools.names() == ["probe"]


def test_a_deleted_module_is_no_longer_served_nor_imported(features: Path) -> None:
    (features / "probe.py").write_text(tool_module("probe", "here"))
    (features / "other.py").write_text(tool_module("other", "stays"))
    rebuilds = Rebuilds()
    watcher = reloader(features, rebuilds)
    (features / "probe.py").unlink()
    assert watcher.check() == Changes(deleted=("probe.py",))
    assert rebuilds.catalogs[-1].tools.names() == ["other"]
    assert f"{FEATURES_PACKAGE}.probe" not in sys.modules


def test_each_reload_imports_every_module_afresh_and_registers_it_once(features: Path) -> None:
    # Given a helper module that feature modules import by the package's name
    (features / "_shared.py").write_text('PREFIX = "v1"\n')
    (features / "probe.py").write_text(
        "from mcp_platform.protocol.tools import tool\nfrom mcp_tools._shared import PREFIX\n\n\n"
        '@tool(description="Answers the helper\'s prefix.")\nasync def probe(ctx: object) -> str:\n'
        "    return PREFIX\n"
    )
    rebuilds = Rebuilds()
    watcher = reloader(features, rebuilds)
    first_module = sys.modules[f"{FEATURES_PACKAGE}.probe"]
    # When only the helper changes
    (features / "_shared.py").write_text('PREFIX = "v2"\n')
    watcher.check()
    # Then its importer runs again on the new helper, and its tool is registered once
    assert sys.modules[f"{FEATURES_PACKAGE}.probe"] is not first_module
    assert rebuilds.answer("probe") == "v2"
    assert rebuilds.catalogs[-1].tools.names() == ["probe"]


# -- swapping the app -----------------------------------------------------------------------------
@dataclass
class RecordingApp:
    """An ASGI app that records its lifespan and requests; a request waits for ``release``."""

    name: str
    events: list[str]
    release: asyncio.Event | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.events.append(f"{self.name} started")
                    await send({"type": "lifespan.startup.complete"})
                else:
                    self.events.append(f"{self.name} shut down")
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        self.events.append(f"{self.name} serves {scope['path']}")
        if self.release is not None:
            await self.release.wait()
        self.events.append(f"{self.name} answered {scope['path']}")


class ServerLifespan:
    """What uvicorn does with the app's lifespan: startup before serving, shutdown at the end."""

    def __init__(self, app: SwappableApp) -> None:
        self.to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task = asyncio.ensure_future(app({"type": "lifespan"}, self.to_app.get, self.from_app.put))

    async def send(self, event: str) -> None:
        await self.to_app.put({"type": event})
        assert (await self.from_app.get())["type"] == f"{event}.complete"


async def request(app: SwappableApp, path: str) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        return None

    await app({"type": "http", "path": path}, receive, send)


def test_a_request_in_flight_ends_on_the_app_it_started_on_and_that_app_shuts_down_after_it() -> None:
    events: list[str] = []

    async def scenario() -> None:
        # Given a request in flight on app A
        first = RecordingApp("A", events, release=asyncio.Event())
        app = SwappableApp(first)
        server = ServerLifespan(app)
        await server.send("lifespan.startup")
        in_flight = asyncio.ensure_future(request(app, "/slow"))
        await asyncio.sleep(0)
        # When B replaces A (from another thread, as the reloader does) and a new request arrives
        await asyncio.to_thread(app.replace, RecordingApp("B", events))
        await request(app, "/new")
        # Then B serves it while A still holds the first request; A shuts down once it ends
        assert "A shut down" not in events
        assert first.release is not None
        first.release.set()
        await in_flight
        await asyncio.sleep(0.01)
        await server.send("lifespan.shutdown")
        await server.task

    asyncio.run(scenario())
    assert events == [
        "A started",
        "A serves /slow",
        "B started",
        "B serves /new",
        "B answered /new",
        "A answered /slow",
        "A shut down",
        "B shut down",
    ]


def test_an_idle_app_is_shut_down_when_replaced_and_the_server_stop_shuts_down_the_current_one() -> None:
    events: list[str] = []

    async def scenario() -> None:
        app = SwappableApp(RecordingApp("A", events))
        server = ServerLifespan(app)
        await server.send("lifespan.startup")
        await request(app, "/one")
        await asyncio.to_thread(app.replace, RecordingApp("B", events))
        await asyncio.to_thread(app.replace, RecordingApp("C", events))
        await request(app, "/two")
        await server.send("lifespan.shutdown")
        await server.task

    asyncio.run(scenario())
    assert events == [
        "A started",
        "A serves /one",
        "A answered /one",
        "B started",
        "A shut down",
        "C started",
        "B shut down",
        "C serves /two",
        "C answered /two",
        "C shut down",
    ]


# -- swapping the task worker's handlers --------------------------------------------------------
@dataclass
class RecordingHandler:
    """A task-worker handler that records its invocations and its close; an invocation waits for
    ``release`` when given one."""

    name: str
    events: list[str]
    release: threading.Event | None = None
    started: threading.Event = field(default_factory=threading.Event)

    def __call__(self, event: dict[str, Any], context: Any) -> str:
        self.events.append(f"{self.name} runs {event['id']}")
        self.started.set()
        if self.release is not None:
            assert self.release.wait(5)
        return self.name

    def close(self) -> None:
        self.events.append(f"{self.name} closed")


def test_a_replaced_handler_finishes_its_invocation_and_is_closed_after_it() -> None:
    # Given an invocation running on handler A
    events: list[str] = []
    first = RecordingHandler("A", events, release=threading.Event())
    handler = ReloadableHandler(first)
    running = threading.Thread(target=handler, args=({"id": 1}, None))
    running.start()
    assert first.started.wait(5)
    # When B replaces A, then the next invocation runs on B while A still runs
    handler.replace(RecordingHandler("B", events))
    assert "A closed" not in events
    assert first.release is not None
    first.release.set()
    running.join(5)
    # Then A is closed once its invocation has ended, and B serves the next one
    assert handler({"id": 2}, None) == "B"
    assert events == ["A runs 1", "A closed", "B runs 2"]


def test_an_idle_handler_is_closed_when_replaced() -> None:
    events: list[str] = []
    handler = ReloadableHandler(RecordingHandler("A", events))
    handler({"id": 1}, None)
    handler.replace(RecordingHandler("B", events))
    handler.replace(RecordingHandler("C", events))
    assert handler({"id": 2}, None) == "C"
    assert events == ["A runs 1", "A closed", "B closed", "C runs 2"]


# -- policies ---------------------------------------------------------------------------------------
def test_saving_a_policy_file_rebuilds_with_it_and_a_bad_one_keeps_the_last_good_build(
    features: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Given a reloader that builds the policies too (as the endpoint's root does), when a policy
    file is added to the policies folder, then the next look rebuilds with it; when it is saved
    with a policy the catalog refuses, the build fails, is logged, and what served keeps serving."""
    from mcp_platform.application.policies.ports import PolicyError
    from mcp_platform.testing import PolicyCheck

    (features / "probe.py").write_text(tool_module("probe", "hi"))
    policies = tmp_path / "policies"
    policies.mkdir()
    checks: list[PolicyCheck | None] = []

    def rebuild(package: ModuleType) -> Catalog:
        has_files = any(policies.glob("*.cedar"))
        checks.append(PolicyCheck(package, policies=policies) if has_files else None)
        return Catalog.discover(package)

    served = stamps_of(features, policies)
    rebuild(load_features(features))
    watcher = FeatureReloader(
        features, rebuild, served=served, interval_s=0.01, stop=threading.Event(), policies=policies
    )
    (policies / "deny.cedar").write_text('forbid(principal, action == Action::"probe", resource);\n')
    assert watcher.check() == Changes(added=("policies/deny.cedar",))
    latest = checks[-1]
    assert latest is not None and not latest.may_call("probe")
    (policies / "deny.cedar").write_text('forbid(principal, action == Action::"no_such_tool", resource);\n')
    with caplog.at_level(logging.ERROR, logger="local.reload"):
        assert watcher.check() == Changes(changed=("policies/deny.cedar",))
    assert "still serving the previous features" in caplog.text and "no_such_tool" in caplog.text
    assert checks[-1] is latest  # the failed build left nothing behind
    with pytest.raises(PolicyError):
        PolicyCheck(load_features(features), policies=policies)
