"""Powertools for AWS Lambda as the event functions (ingest, audit, the task worker) log and count.

``platform_logger``: a Powertools ``Logger`` whose handler is also the root logger's, so every
line of the process (the platform's modules, botocore's) is one Powertools JSON object with the
fields every function's lines have: ``level``, ``logger``, ``message``, ``service``,
``timestamp``, the call's ``extra`` fields and ``exception``; Powertools adds ``location``, the
Lambda context's fields and ``cold_start`` (``inject_lambda_context``). A line written inside a
request's, a task run's or a stream record's trace carries its ``trace_id`` and ``span_id``
(``protocol.trace_context``, read when the line is formatted, in the logging call's own context)
and the trace id as Powertools' ``correlation_id``.

``platform_metrics``: a Powertools ``EphemeralMetrics`` (no metric set shared between instances:
the local platform runs three functions in one process) in the platform's namespace, flushed
once per invocation by ``log_metrics``, with Powertools' ``ColdStart`` metric.

``PowertoolsMetricsWriter``: the platform's counters (store conflicts and throttles, dead-lettered
events) written through Powertools' EMF serializer, one line when they happen, as
:class:`~mcp_platform.application.metrics.MetricsWriter` writes them.
"""

from __future__ import annotations

import logging
import math
import sys
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics import EphemeralMetrics

from mcp_platform.application.metrics import SERVICE, MetricsWriter
from mcp_platform.protocol.trace_context import current_fields

# The order of the fields every line starts with (Powertools appends the rest).
LOG_RECORD_ORDER = ["level", "logger", "message", "service", "timestamp"]
CORRELATION_ID = "correlation_id"


class PlatformLogFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter, with the logger's name and the current trace on every line."""

    def __init__(self, service: str) -> None:
        super().__init__(log_record_order=LOG_RECORD_ORDER, utc=True, use_rfc3339=True, service=service)

    def format(self, record: logging.LogRecord) -> str:
        # Fields added as the record's own attributes: Powertools writes them as extra keys.
        if not hasattr(record, "logger"):
            record.logger = record.name
        fields = current_fields()
        for name, value in fields.items():
            if not hasattr(record, name):
                setattr(record, name, value)
        if "trace_id" in fields and not hasattr(record, CORRELATION_ID):
            record.correlation_id = fields["trace_id"]
        return super().format(record)


def platform_logger(service: str, level: str = "INFO") -> Logger:
    """The function's Powertools ``Logger``; its handler (stderr, ``PlatformLogFormatter``) is the
    root logger's only one, replacing earlier configuration (the Lambda runtime's own handler
    included). The service's logger hands its records to the root, so no line is written twice;
    built again (a test's reload, another function in the local platform's process) it takes the
    new handler."""
    formatter = PlatformLogFormatter(service)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    # Before the root is configured: Powertools filters the service's records out of the root
    # handlers it finds at its first start (its duplicate guard), which must not be this one.
    logger = Logger(service=service, level=level, logger_handler=handler, logger_formatter=formatter)
    own = logging.getLogger(service)
    for previous in list(own.handlers):
        own.removeHandler(previous)
    own.propagate = True
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    return logger


def platform_metrics(namespace: str, service: str) -> EphemeralMetrics:
    """The function's Powertools metrics: flushed by its handler's ``log_metrics`` decorator."""
    return EphemeralMetrics(namespace=namespace, service=service)


class PowertoolsMetricsWriter(MetricsWriter):
    """:class:`MetricsWriter` on Powertools' EMF: each line a metric set of its own (its
    dimension sets, its properties as metadata, the current trace's ids), flushed at once."""

    def write(
        self,
        metrics: dict[str, tuple[float, str]],
        *,
        dimension_sets: list[list[str]],
        values: dict[str, str],
        per_service: dict[str, tuple[float, str]] | None = None,
    ) -> None:
        if per_service:  # one directive per metric set in Powertools: their own line, per service
            self.write(per_service, dimension_sets=[[SERVICE]], values=values)
        line = EphemeralMetrics(namespace=self.namespace, service=self.service)
        for name, (value, unit) in metrics.items():
            if math.isfinite(value):
                line.add_metric(name=name, unit=unit, value=value)
        dimensions = {SERVICE: self.service, **values}
        named: set[str] = set()
        for dimension_set in dimension_sets:
            if dimension_set != [SERVICE]:  # Powertools' primary set is the service
                line.add_dimensions(**{name: dimensions[name] for name in dimension_set})
                named.update(dimension_set)
        for name, text in {**values, **current_fields()}.items():
            if name not in named:
                line.add_metadata(key=name, value=text)
        emf: Any = line.serialize_metric_set()
        self.stream.write(_dumps(emf) + "\n")
        self.stream.flush()


def _dumps(value: object) -> str:
    from mcp_platform.protocol import compact_json

    return compact_json.dumps(value).decode()
