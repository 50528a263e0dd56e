"""Observability without start-up cost: EMF metric lines and JSON log lines on stdout/stderr,
the endpoint's logging and metrics path (the event functions write the same fields and names
through Powertools, ``mcp_platform.adapters.powertools``; docs/architecture/decisions.md says why
the endpoint keeps this one), and the metric names every function uses.

Both are plain log lines (CloudWatch turns EMF lines into metrics; Logs Insights queries the
JSON fields), so no client is built and no call is made on the request path. A line written while
a request is handled carries its ``trace_id`` and ``span_id`` (``protocol.trace_context``): a
trace id finds every line of its request.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from typing import Protocol

from mcp_platform.protocol import compact_json
from mcp_platform.protocol.trace_context import current_fields

# What every LogRecord has: anything else on a record came from ``extra=`` and is logged too.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record, the same fields in every function: level, logger, message,
    service, timestamp (epoch milliseconds), the current request's or record's trace and span ids
    when there is one, the ``extra=`` fields of the call, and the exception. The ids are read when
    the record is formatted, which a stream handler does in the logging call's own thread and
    context."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "service": self.service,
            "timestamp": int(record.created * 1000),
            **current_fields(),
        }
        for name, value in vars(record).items():
            if name not in _RECORD_ATTRIBUTES and name not in entry:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return compact_json.dumps(entry).decode()


def configure_logging(service: str, level: str = "INFO") -> None:
    """Send every logger of the process through one JSON handler (replaces earlier config, the
    Lambda runtime's own handler included): the one logging path of all four functions."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter(service))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


# The OpenTelemetry semantic conventions' names for MCP (status: development): the operation's
# duration in seconds, dimensioned by method and target; attribute names as the conventions spell them.
OPERATION_DURATION = "mcp.server.operation.duration"
OPERATION_ERRORS = "mcp.server.operation.errors"  # 1 per failed request, 0 otherwise: its average is the error rate
TIME_TO_FIRST_BYTE = "mcp.server.time_to_first_byte"  # S4, milliseconds
# Counters in the same family (not in the conventions): one line per occurrence, so their Sum
# per period is the count, and a period without any has no data (read as zero).
STORE_CONFLICTS = "mcp.server.store.conflicts"  # a commit lost its race (the tool reruns) or kept conflicting
STORE_THROTTLES = "mcp.server.store.throttles"  # a throttle that outlasted the SDK's retries
EVENTS_DEAD_LETTERED = "mcp.server.events.dead_lettered"  # tool-call events Kinesis refused, sent to the DLQ
GOVERNANCE_REFUSALS = "mcp.server.governance.refused"  # requests answered 429 by a rate limit or quota
GOVERNANCE_RULE = "mcp.governance.rule"  # the rule that refused: a key of rate_limits, or quota:<key>:<period>
# The event functions' batches (ingest, audit, the task worker): per invocation, in the function's
# Powertools metric set (mcp_platform.bootstrap.batches), with Powertools' ColdStart beside them.
RECORDS_CONSUMED = "mcp.consumer.records"  # records (messages) the invocation was given
RECORDS_FAILED = "mcp.consumer.records.failed"  # of which reported as batch item failures (or all: the batch failed)
METHOD = "mcp.method.name"
TOOL = "gen_ai.tool.name"
PROMPT = "gen_ai.prompt.name"
ERROR_TYPE = "error.type"
PROTOCOL_VERSION = "mcp.protocol.version"
SERVICE = "service"


class LineSink(Protocol):
    """Where EMF lines go: stdout in Lambda (CloudWatch Logs reads it); anything with these two
    methods elsewhere (the local platform's endpoint log, a benchmark's sink)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class MetricsWriter:
    """Writes EMF lines: CloudWatch turns each into metrics; no client, no call on the request path."""

    def __init__(self, namespace: str, service: str, stream: LineSink | None = None) -> None:
        self.namespace = namespace
        self.service = service
        self.stream: LineSink = stream or sys.stdout

    def count(
        self, name: str, value: int = 1, *, per: tuple[str, str] | None = None, properties: dict[str, str] | None = None
    ) -> None:
        """A counter: ``value`` occurrences, per service and, with ``per`` = (attribute, name), per
        that attribute too (a known tool: never a name a client made up). ``properties`` travel
        in the line for Logs Insights without becoming dimensions."""
        dimension_sets = [[SERVICE]]
        values = dict(properties or {})
        if per is not None:
            attribute, target = per
            dimension_sets.append([SERVICE, attribute])
            values[attribute] = target
        self.write({name: (value, "Count")}, dimension_sets=dimension_sets, values=values)

    def operation(
        self,
        *,
        method: str,
        seconds: float,
        failed: bool,
        target: tuple[str, str] | None,
        properties: dict[str, str],
        first_byte_ms: float | None = None,
    ) -> None:
        """One request, one line: its duration and whether it failed, per service and per method,
        or per method and tool or prompt (``target`` = (attribute, name)) when it has one: a
        targeted method's count and errors are the sum of its targets' series (metric math), its
        percentiles the service's; its time to first byte, when it sent one, per service (S4), so
        that tools do not multiply its custom metrics (docs/architecture/decisions.md). ``properties``
        (error type, protocol version) and the current trace and span ids travel in the line for
        Logs Insights without becoming dimensions: on success it is the request's only line, the
        one that ties its outcome to its trace."""
        values = {METHOD: method, **properties}
        if target is not None:
            attribute, name = target
            dimension_sets = [[SERVICE], [SERVICE, METHOD, attribute]]
            values[attribute] = name
        else:
            dimension_sets = [[SERVICE], [SERVICE, METHOD]]
        metrics = {OPERATION_DURATION: (seconds, "Seconds"), OPERATION_ERRORS: (1 if failed else 0, "Count")}
        per_service = {TIME_TO_FIRST_BYTE: (first_byte_ms, "Milliseconds")} if first_byte_ms is not None else {}
        self.write(metrics, dimension_sets=dimension_sets, values=values, per_service=per_service)

    def write(
        self,
        metrics: dict[str, tuple[float, str]],
        *,
        dimension_sets: list[list[str]],
        values: dict[str, str],
        per_service: dict[str, tuple[float, str]] | None = None,
    ) -> None:
        """One EMF line: ``metrics`` under ``dimension_sets``, and ``per_service`` (metrics of the
        same line dimensioned by the service alone) in a second directive."""
        directives = [(metrics, dimension_sets)] + ([(per_service, [[SERVICE]])] if per_service else [])
        record: dict[str, object] = {
            "_aws": {
                "Timestamp": int(time.time() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": self.namespace,
                        "Dimensions": dimensions,
                        "Metrics": [{"Name": name, "Unit": unit} for name, (_, unit) in group.items()],
                    }
                    for group, dimensions in directives
                ],
            },
            SERVICE: self.service,
            **current_fields(),
            **values,
        }
        for name, (value, _) in {**metrics, **(per_service or {})}.items():
            record[name] = round(value, 6) if math.isfinite(value) else None
        self.stream.write(compact_json.dumps(record).decode() + "\n")
        # Lambda's stdout is a pipe, which Python buffers by blocks: flushed here, the line leaves
        # within its invocation, not whenever 8 KB have gathered (or never, if the process dies).
        self.stream.flush()
