"""The local endpoint's log lines: as deployed in a file, one compact line per call on the console.

Inside Lambda the endpoint writes EMF lines (per request: its operation; per response: its time
to first byte) and JSON log lines to stdout, and CloudWatch Logs keeps them. Locally the same
lines go to a file per endpoint, ``<LOCAL_LOG_DIR>/aws-<emulator port>/endpoint-<MCP port>.jsonl``
(rotated at 64 MB, one old file kept), where `python -m local.trace` finds a trace's lines; the
console shows one line per call instead of the EMF line::

    call  tools/call        append_note       ok              12.3 ms  trace 4bf92f3577b34da6a3ce929d0e0e4736

The JSON log lines kept are those written while a request or a task run is handled (a trace is
current: the endpoint's, and the task worker's, which runs in this process too); the console
keeps the text lines of every logger as before.
"""

from __future__ import annotations

import json
import logging
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any, TextIO

from mcp_platform.application.metrics import (
    ERROR_TYPE,
    METHOD,
    OPERATION_DURATION,
    PROMPT,
    TOOL,
    JsonLogFormatter,
)
from mcp_platform.protocol import trace_context

MAX_FILE_BYTES = 64 * 1024 * 1024
AS_IS = "local_as_is"
"""A record attribute: the message is a line as deployed (an EMF line), written unchanged."""


def compact_line(emf_line: str) -> str | None:
    """The console line of a request's operation metric line; None for any other line."""
    try:
        record: Any = json.loads(emf_line)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or OPERATION_DURATION not in record:
        return None
    return f"call  {call_summary(record)}  trace {record.get(trace_context.TRACE_ID) or '-'}"


def call_summary(record: dict[str, Any]) -> str:
    """Method, target (tool or prompt), status (``ok`` or the error type) and duration of a
    request's operation metric line."""
    seconds = record[OPERATION_DURATION]
    duration = f"{seconds * 1000:8.1f} ms" if isinstance(seconds, int | float) else "       ? ms"
    target = record.get(TOOL) or record.get(PROMPT) or "-"
    status = record.get(ERROR_TYPE) or "ok"
    return f"{record.get(METHOD, '?'):<17} {target:<17} {status:<12} {duration}"


class _AsDeployed(logging.Formatter):
    """EMF lines unchanged, log records as the endpoint's JSON log lines."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self._json = JsonLogFormatter(service)

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, AS_IS, False):
            return record.getMessage()
        return self._json.format(record)


def _in_a_request(record: logging.LogRecord) -> bool:
    """Read in the logging call's own thread and context: a request's line, or an EMF line."""
    return bool(getattr(record, AS_IS, False)) or trace_context.current() is not None


class EndpointLog:
    """The endpoint's ``metrics_stream`` (EMF lines) and a root log handler (JSON lines), into
    ``path``; the compact call lines go to ``console``. :meth:`close` detaches it."""

    def __init__(self, path: Path, service: str, console: TextIO | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.console = console or sys.stdout
        self.handler = RotatingFileHandler(path, maxBytes=MAX_FILE_BYTES, backupCount=1, encoding="utf-8")
        self.handler.setFormatter(_AsDeployed(service))
        self.handler.addFilter(_in_a_request)
        self.handler.setLevel(logging.INFO)
        logging.getLogger().addHandler(self.handler)

    def write(self, text: str, /) -> int:
        for line in text.splitlines():
            if not line:
                continue
            record = logging.makeLogRecord({"msg": line, "levelno": logging.INFO, "levelname": "INFO", AS_IS: True})
            self.handler.handle(record)
            compact = compact_line(line)
            if compact is not None:
                print(compact, file=self.console, flush=True)
        return len(text)

    def flush(self) -> None:
        return None  # every line is flushed by the handler as it is written

    def close(self) -> None:
        logging.getLogger().removeHandler(self.handler)
        self.handler.close()


def log_files(folder: Path) -> list[Path]:
    """The endpoint log files in ``folder``, rotated ones included, oldest lines first."""
    return sorted(folder.glob("endpoint-*.jsonl.1")) + sorted(folder.glob("endpoint-*.jsonl"))


def clear(folder: Path) -> None:
    """A fresh emulator holds none of the traces the old files name: they go."""
    for path in log_files(folder):
        path.unlink(missing_ok=True)
