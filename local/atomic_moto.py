"""A moto server whose requests each run atomically, as DynamoDB's writes do.

moto's DynamoDB backend evaluates a condition and applies the write as separate Python steps
with no lock, so two concurrent requests on one item can interleave inside moto (seen: a lost
``list_append`` and a lost version-checked update, a few runs in ten). Real DynamoDB applies
each single-item write (and each transaction) atomically, and the platform's optimistic
locking relies on that. Running one request at a time restores the guarantee; races *between*
requests (read, then write) stay possible, exactly as on AWS. Overrides a private moto hook
(``_server_entry``, moto 5.2): a moto upgrade must keep it working (tests cover it).

Creating the server also applies :mod:`local.moto_patches` (bounded memory, item-level
transaction rollback), which refuses any moto but the pinned one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

from local import moto_patches

WsgiApp = Callable[[dict[str, Any], Any], Iterable[bytes]]


class AtomicMotoServer(ThreadedMotoServer):
    """ThreadedMotoServer serving one request at a time (threaded HTTP handling unchanged).

    ``lock`` is held for each request; in-process readers of moto's state take it too. ``wrap``
    serves more beside moto (the local DAX cluster): it gets the atomic app and returns the one
    served.
    """

    def __init__(self, *args: Any, wrap: Callable[[WsgiApp], WsgiApp] | None = None, **kwargs: Any) -> None:
        moto_patches.apply()
        super().__init__(*args, **kwargs)
        self.lock = threading.Lock()
        self._wrap = wrap

    def _server_entry(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)
        lock = self.lock

        def atomic(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            with lock:
                return list(app(environ, start_response))

        served = atomic if self._wrap is None else self._wrap(atomic)
        self._server = make_server(self._ip_address, self._port, served, True, request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()
