"""The local platform's port check (issue 28): a port whose last server stopped moments ago is
free to listen on again, as the servers that bind it (uvicorn, werkzeug) see it; a port with a
live listener is not."""

from __future__ import annotations

import socket
from pathlib import Path

from local.bootstrap import LOOPBACK, port_is_free

TIME_WAIT = "06"  # the state column of /proc/net/tcp


def states_on(port: int) -> set[str]:
    """The TCP states of the loopback sockets whose local port is ``port``."""
    local = f"0100007F:{port:04X}"
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return {fields[3] for fields in (row.split() for row in rows) if fields[1] == local}


def port_in_time_wait() -> int:
    """A port whose server accepted a connection and closed it first, then stopped listening:
    the connection stays in TIME_WAIT on the server's port (60 s on Linux), as after `make dev`
    is stopped with clients connected."""
    with socket.create_server((LOOPBACK, 0)) as listener:
        port = int(listener.getsockname()[1])
        with socket.create_connection((LOOPBACK, port)) as client:
            accepted, _ = listener.accept()
            accepted.close()  # the server closes first: its side ends in TIME_WAIT
            assert client.recv(1) == b""
    return port


def test_a_port_in_time_wait_after_its_server_stopped_is_free() -> None:
    """Given a port with a connection of a stopped server in TIME_WAIT, Then the check accepts
    it (it refused it for about a minute: it bound without SO_REUSEADDR)."""
    port = port_in_time_wait()
    assert TIME_WAIT in states_on(port)
    assert port_is_free(port)


def test_a_port_with_a_live_listener_is_not_free() -> None:
    with socket.create_server((LOOPBACK, 0)) as listener:
        assert not port_is_free(int(listener.getsockname()[1]))


def test_a_port_in_time_wait_with_a_new_live_listener_is_not_free() -> None:
    """SO_REUSEADDR lets the check past TIME_WAIT only: a server listening again is still seen."""
    port = port_in_time_wait()
    with socket.create_server((LOOPBACK, port)):
        assert not port_is_free(port)
