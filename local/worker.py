"""A background worker of the local platform: one daemon thread running its ``_run``.

Pollers, sweepers, the health reporter and the feature reloader are each one: started once the
platform is up, joined by ``Running.shutdown`` within its budget (daemon threads, so a worker still
busy then ends with the process)."""

from __future__ import annotations

import threading


class BackgroundWorker:
    def __init__(self, thread_name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        """Waits up to ``timeout`` seconds for the thread to end. A worker never started (a start-up
        that failed before it) has nothing to wait for."""
        if self._thread.ident is not None:
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        raise NotImplementedError
