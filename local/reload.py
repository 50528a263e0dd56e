"""`make dev` reloads the features folder while the emulator and everything in it keeps running.

Saving, adding or deleting a module in the features folder (``MCP_FEATURES_DIR``, by default
``functions/endpoint/mcp_tools``), or a policy file in the policies folder (``MCP_POLICIES_DIR``,
by default ``functions/endpoint/policies``), re-imports the whole features package from scratch, builds a
new endpoint app and new task-worker handlers from it through the same composition root as at
start-up, and swaps them in. A package that fails to import or to register is logged with its
traceback, and the previous app and handlers keep serving.

Why swap the app rather than restart uvicorn: the endpoint keeps no session state in the process
(transport sessions, session handles, tasks and pending questions live in the table, so that any
Lambda instance serves any session), so a freshly built app is simply a new instance behind the
same port. Swapping it leaves the listening socket open: no connection is refused while a server
restarts, a connected client does not notice, and a request or stream that started before the
reload ends on the app that started it. It also leaves uvicorn's configuration alone.

Why polling: the folder holds a few dozen small files, so one ``stat`` each every half second
costs nothing measurable, needs no dependency and sees changes on every filesystem (bind mounts,
network and WSL folders, where inotify events do not arrive). ``watchfiles`` would add a compiled
dependency for no gain at this size.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from local.worker import BackgroundWorker
from mcp_platform.protocol.catalog import Catalog

logger = logging.getLogger(__name__)

FEATURES_PACKAGE = "mcp_tools"  # the name feature modules import each other by
RELOAD_REPLACE_TIMEOUT_S = 10.0

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
FileStamps = dict[str, tuple[int, int]]  # path relative to the folder -> (mtime in ns, size)


# -- importing the features package ------------------------------------------------------------
def load_features(directory: Path) -> ModuleType:
    """Imports the features package found in ``directory`` under FEATURES_PACKAGE, from scratch.

    Every module of the package imported before is dropped first, so each feature module runs
    once more on its current source (a module removed from the folder is gone, a helper module
    edited is re-read by whoever imports it). Its submodules are imported by the catalog's
    discovery, which then finds each spec once: registration is explicit (``Catalog.discover``),
    so a fresh import cannot register anything twice.
    """
    forget_features()
    importlib.invalidate_caches()  # a module added since the last import must be found
    spec = importlib.util.spec_from_file_location(
        FEATURES_PACKAGE, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"the features folder {directory} is not a Python package (no __init__.py)")
    package = importlib.util.module_from_spec(spec)
    sys.modules[FEATURES_PACKAGE] = package  # before it runs, as the import system does
    spec.loader.exec_module(package)
    return package


def forget_features() -> dict[str, ModuleType]:
    """Drops the features package and its submodules from ``sys.modules``; returns them."""
    names = [name for name in sys.modules if name == FEATURES_PACKAGE or name.startswith(FEATURES_PACKAGE + ".")]
    return {name: sys.modules.pop(name) for name in names}


def restore_features(modules: Mapping[str, ModuleType]) -> None:
    forget_features()
    sys.modules.update(modules)


def discard_stale_bytecode(directory: Path, files: Iterable[str]) -> None:
    """Removes the cached bytecode of files that changed.

    The import system trusts a ``.pyc`` whose recorded source mtime (whole seconds) and size
    match the source: an edit that keeps the size, saved within the second of the previous
    import, would otherwise run the old code.
    """
    for name in files:
        cached = Path(importlib.util.cache_from_source(str(directory / name)))
        cached.unlink(missing_ok=True)


# -- noticing changes --------------------------------------------------------------------------
def file_stamps(directory: Path, pattern: str = "*.py") -> FileStamps:
    """The files under ``directory`` matching ``pattern`` (bytecode caches excluded) and their stamps."""
    stamps: FileStamps = {}
    for path in directory.rglob(pattern):
        if "__pycache__" in path.parts:
            continue
        try:
            status = path.stat()
        except FileNotFoundError:
            continue  # deleted while listing: the next look reports it
        stamps[path.relative_to(directory).as_posix()] = (status.st_mtime_ns, status.st_size)
    return stamps


POLICIES_PREFIX = "policies/"
POLICY_PATTERN = "*.cedar"


def stamps_of(features: Path, policies: Path | None) -> FileStamps:
    """What a reload watches: the features folder's modules and the policies folder's files."""
    stamps = file_stamps(features)
    if policies is not None and policies.is_dir():
        found = {path.name: stamp for path, stamp in _top_level(policies, POLICY_PATTERN)}
        stamps.update({POLICIES_PREFIX + name: stamp for name, stamp in found.items()})
    return stamps


def _top_level(directory: Path, pattern: str) -> list[tuple[Path, tuple[int, int]]]:
    """The folder's own files matching ``pattern`` (not its subfolders', as the endpoint reads them)."""
    found = []
    for path in directory.glob(pattern):
        try:
            status = path.stat()
        except FileNotFoundError:
            continue
        found.append((path, (status.st_mtime_ns, status.st_size)))
    return found


@dataclass(frozen=True)
class Changes:
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    @classmethod
    def between(cls, before: FileStamps, after: FileStamps) -> Changes:
        return cls(
            added=tuple(sorted(after.keys() - before.keys())),
            changed=tuple(sorted(name for name in after.keys() & before.keys() if after[name] != before[name])),
            deleted=tuple(sorted(before.keys() - after.keys())),
        )

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.deleted)

    @property
    def written(self) -> tuple[str, ...]:
        return self.added + self.changed

    def __str__(self) -> str:
        named = {"added": self.added, "changed": self.changed, "deleted": self.deleted}
        return "; ".join(f"{verb} {', '.join(names)}" for verb, names in named.items() if names)


@dataclass(frozen=True)
class Served:
    """What a rebuilt catalog serves, for the reload line."""

    tools: int
    resources: int
    templates: int
    prompts: int

    @classmethod
    def of(cls, catalog: Catalog) -> Served:
        return cls(len(catalog.tools.names()), len(catalog.resources), len(catalog.templates), len(catalog.prompts))

    def __str__(self) -> str:
        counts = {"tool": self.tools, "resource": self.resources, "resource template": self.templates}
        counts["prompt"] = self.prompts
        return ", ".join(f"{count} {noun}{'' if count == 1 else 's'}" for noun, count in counts.items())


Rebuild = Callable[[ModuleType], Catalog]
"""Builds everything that serves the features from the freshly imported package, swaps it in
only once all of it is built, and returns the catalog now served."""


class FeatureReloader(BackgroundWorker):
    """Looks at the features folder every ``interval_s``; once a change has settled (two looks
    alike, so an editor's multi-step save is taken whole), imports it afresh and rebuilds."""

    def __init__(
        self,
        directory: Path,
        rebuild: Rebuild,
        *,
        served: FileStamps,
        interval_s: float,
        stop: threading.Event,
        policies: Path | None = None,
    ) -> None:
        """``served``: the stamps (:meth:`stamps`) taken before the package now served was
        imported, so a change saved while the platform was starting is reloaded too; ``policies``:
        the folder of the ``*.cedar`` files the endpoint reads at each build."""
        self.directory = directory
        self.policies = policies
        self.interval_s = interval_s
        self._rebuild = rebuild
        self._stop = stop
        self._served = served
        super().__init__("features-reload")

    def check(self) -> Changes:
        """One look: reloads if the folder changed since the last build and has since settled."""
        seen = self.stamps()
        changes = Changes.between(self._served, seen)
        if not changes:
            return changes
        if self._stop.wait(self.interval_s):
            return Changes()  # stopping: nothing more to serve
        if self.stamps() != seen:
            return Changes()  # still being written: the next look takes it once it settles
        self.reload(changes)
        self._served = seen  # a failed build is not retried until the folder changes again
        return changes

    def stamps(self) -> FileStamps:
        """The features folder's modules, and the policy files as ``policies/<name>``."""
        return stamps_of(self.directory, self.policies)

    def reload(self, changes: Changes) -> Served | None:
        started = time.monotonic()
        discard_stale_bytecode(self.directory, [name for name in changes.written if name.endswith(".py")])
        previous = forget_features()
        try:
            served = Served.of(self._rebuild(load_features(self.directory)))
        except Exception:
            # What the process has imported stays what it serves: a lazy import in a tool still
            # serving finds its own modules, not the broken ones.
            restore_features(previous)
            logger.exception("reload: %s -> failed, still serving the previous features", changes)
            return None
        logger.info("reload: %s -> serving %s (%.2f s)", changes, served, time.monotonic() - started)
        return served

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.check()
            except Exception:
                logger.exception("reload: looking at %s failed; trying again", self.directory)


# -- swapping what serves ----------------------------------------------------------------------
class SwappableApp:
    """The ASGI app uvicorn serves: each request runs to its end on the app that was current when
    it arrived; :meth:`replace` installs a new one. Each app gets its own ASGI lifespan: started
    when installed, shut down (the endpoint flushes buffered tool events) once it is replaced and
    its last request has ended, or when the server stops. Everything but :meth:`replace` runs on
    the server's event loop, so the bookkeeping needs no lock."""

    def __init__(self, app: AsgiApp) -> None:
        self._current = _Installed(app)
        self._started: set[_Installed] = set()  # lifespans not shut down yet
        self._shutting_down: set[asyncio.Future[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
            return
        installed = self._current
        installed.in_flight += 1
        try:
            await installed.app(scope, receive, send)
        finally:
            installed.in_flight -= 1
            if installed is not self._current and not installed.in_flight:
                # Its own task: a cancelled request must not cut the flush short.
                shutting_down = asyncio.ensure_future(self._shut_down(installed))
                self._shutting_down.add(shutting_down)  # held until done (the loop keeps weak references)
                shutting_down.add_done_callback(self._shutting_down.discard)

    def replace(self, app: AsgiApp, timeout_s: float = RELOAD_REPLACE_TIMEOUT_S) -> None:
        """From any thread but the server's: returns once ``app`` serves every new request."""
        if self._loop is None:  # not served yet: nothing to start or drain
            self._current = _Installed(app)
            return
        asyncio.run_coroutine_threadsafe(self._install(app), self._loop).result(timeout_s)

    async def _install(self, app: AsgiApp) -> None:
        installed = _Installed(app)
        await self._start(installed)
        retired, self._current = self._current, installed
        if not retired.in_flight:
            await self._shut_down(retired)

    async def _start(self, installed: _Installed) -> None:
        await installed.lifespan.startup()
        self._started.add(installed)

    async def _shut_down(self, installed: _Installed) -> None:
        if installed in self._started:
            self._started.discard(installed)
            await installed.lifespan.shutdown()

    async def _serve_lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._loop = asyncio.get_running_loop()
                await self._start(self._current)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for installed in list(self._started):  # the current app and any still draining
                    await self._shut_down(installed)
                await send({"type": "lifespan.shutdown.complete"})
                return


class _Installed:
    """One app as installed: its requests in flight and its lifespan."""

    def __init__(self, app: AsgiApp) -> None:
        self.app = app
        self.in_flight = 0
        self.lifespan = _Lifespan(app)


class _Lifespan:
    """Drives one app's ASGI lifespan protocol, as a server does."""

    def __init__(self, app: AsgiApp) -> None:
        self._app = app
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message] = asyncio.Queue()
        self._task: asyncio.Future[None] | None = None

    async def startup(self) -> None:
        scope: dict[str, Any] = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
        self._task = asyncio.ensure_future(self._app(scope, self._to_app.get, self._from_app.put))
        await self._exchange("lifespan.startup")

    async def shutdown(self) -> None:
        await self._exchange("lifespan.shutdown")
        if self._task is not None:
            await self._task

    async def _exchange(self, event: str) -> None:
        """Sends ``event`` and waits for its answer (or for the app to end, if it fails)."""
        assert self._task is not None
        await self._to_app.put({"type": event})
        answer = asyncio.ensure_future(self._from_app.get())
        either: set[asyncio.Future[Any]] = {answer, self._task}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not answer.done():
            answer.cancel()
            self._task.result()  # raises what the app raised
            raise RuntimeError(f"the app ended its lifespan without answering {event}")
        if answer.result()["type"] != f"{event}.complete":
            raise RuntimeError(f"the app answered {event} with {answer.result()}")


class RetirableHandler(Protocol):
    """A task-worker handler that can release what it holds (its event loop) once retired."""

    def __call__(self, event: dict[str, Any], context: Any) -> Any: ...

    def close(self) -> None: ...


class ReloadableHandler:
    """One task-worker environment's handler, invoked one event at a time (as a Lambda execution
    environment is): an invocation runs to its end on the handler it started on; :meth:`replace`
    sets the one the next invocation runs, and the one replaced is closed as soon as no
    invocation runs on it."""

    def __init__(self, handler: RetirableHandler) -> None:
        self._handler = handler
        self._running: RetirableHandler | None = None
        self._lock = threading.Lock()  # replace() comes from the reloader's thread

    def replace(self, handler: RetirableHandler) -> None:
        with self._lock:
            retired, self._handler = self._handler, handler
            busy = self._running is retired
        if not busy:
            retired.close()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        with self._lock:
            handler = self._running = self._handler
        try:
            return handler(event, context)
        finally:
            with self._lock:
                self._running = None
                retired = handler is not self._handler
            if retired:
                handler.close()
