"""Span export is optional and costs nothing when off: no recorder is built, and no function
imports the span model, the OTLP exporter or the OpenTelemetry SDK at its start; on, each function
builds one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_platform.bootstrap.telemetry import build_spans, record_work
from mcp_platform.config import ConfigError, EnvVars, Settings
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.trace_context import TraceContext
from tests.support.otlp_receiver import otlp_receiver

ROOT = Path(__file__).resolve().parents[3]
CALLER = TraceContext(trace_id="4bf92f3577b34da6a3ce929d0e0e4736", span_id="00f067aa0ba902b7")
SPAN_MODULES = [
    "mcp_platform.application.spans",
    "mcp_platform.adapters.otlp",
    "opentelemetry.sdk.trace",
    "opentelemetry.instrumentation.botocore",
]
FUNCTIONS = {
    "endpoint_app": "functions/endpoint",
    "task_worker": "functions/endpoint",
    "ingest_handler": "functions/ingest",
    "audit_handler": "functions/audit",
}


def loaded_span_modules(module: str, **variables: str) -> list[str]:
    """The span modules in ``sys.modules`` once the function's handler module is imported."""
    probe = (
        f"MODULES = {SPAN_MODULES!r}; import json, sys, {module}; "
        "print(json.dumps([m for m in MODULES if m in sys.modules]))"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        EnvVars.SESSION_TABLE: "sessions",
        EnvVars.AUDIT_TABLE: "audit",
        EnvVars.EVENT_STREAM: "events",
        EnvVars.PRODUCER_DLQ_URL: "https://sqs.us-east-1.amazonaws.com/000000000000/dlq",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "MCP_AUTH": "api_key",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("layers/platform/python", FUNCTIONS[module])),
        **variables,
    }
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("module", sorted(FUNCTIONS))
def test_off_no_function_imports_the_span_model_or_the_exporter(module: str) -> None:
    assert loaded_span_modules(module) == []


@pytest.mark.parametrize("module", ["endpoint_app", "ingest_handler"])
def test_on_the_function_builds_its_recorder(module: str) -> None:
    # The collector need not be up to start: nothing is sent until there is a span
    loaded = loaded_span_modules(module, **{EnvVars.OTLP_TRACES_ENDPOINT: "http://localhost:4318/v1/traces"})
    assert loaded == SPAN_MODULES


def test_the_traces_url_is_the_variable_or_derived_from_the_base_url() -> None:
    base = {EnvVars.SESSION_TABLE: "t"}
    assert Settings.from_mapping(base).otlp_traces_endpoint == ""
    assert build_spans(Settings.from_mapping(base)) is None
    derived = Settings.from_mapping({**base, EnvVars.OTLP_ENDPOINT: "http://localhost:4318/"})
    assert derived.otlp_traces_endpoint == "http://localhost:4318/v1/traces"
    explicit = {**base, EnvVars.OTLP_ENDPOINT: "http://a:4318", EnvVars.OTLP_TRACES_ENDPOINT: "http://b:4318/t"}
    assert Settings.from_mapping(explicit).otlp_traces_endpoint == "http://b:4318/t"
    with pytest.raises(ConfigError, match=EnvVars.OTLP_TRACES_ENDPOINT):
        Settings.from_mapping({**base, EnvVars.OTLP_TRACES_ENDPOINT: "localhost:4318"})


def test_a_records_work_is_activated_as_a_child_of_its_calls_span_even_when_spans_are_off() -> None:
    # Given a record whose event names its call's trace and span / When its work is recorded, spans off
    scope = trace_context.scope()
    try:
        trace = record_work(
            None, "ingest", trace_id="4bf92f3577b34da6a3ce929d0e0e4736", parent_id="00f067aa0ba902b7",
            started_ns=0, attributes={},
        )  # fmt: skip
        # Then the log lines written next carry a span of its own under the call's
        assert trace is not None and trace_context.current() == trace
        assert trace.parent_id == "00f067aa0ba902b7" and trace_context.is_span_id(trace.span_id)
        assert record_work(None, "ingest", trace_id=None, parent_id=None, started_ns=0, attributes={}) is None
    finally:
        trace_context.end_scope(scope)


def test_an_aws_sdk_call_inside_a_platform_span_is_exported_as_its_child(monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3
    from moto import mock_aws

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    with otlp_receiver() as receiver, mock_aws():
        # Given span export on, and a platform span (a request's) current
        settings = Settings.from_mapping({EnvVars.SESSION_TABLE: "t", EnvVars.OTLP_TRACES_ENDPOINT: receiver.url})
        spans = build_spans(settings)
        assert spans is not None
        sqs = boto3.client("sqs", region_name="us-east-1")
        scope = trace_context.scope()
        trace_context.activate(TraceContext(trace_id=CALLER.trace_id, span_id=CALLER.span_id))
        # When the AWS SDK is called inside it, and once outside any platform span
        sqs.list_queues()
        trace_context.end_scope(scope)
        sqs.list_queues()
        spans.flush()
        # Then the one call inside is a client span, a child of the platform's span
        (call,) = receiver.spans()
    assert (call["kind"], call["traceId"], call["parentSpanId"]) == (3, CALLER.trace_id, CALLER.span_id)
    attributes = {a["key"]: a["value"].get("stringValue") for a in call["attributes"]}
    assert (attributes["rpc.service"], attributes["rpc.method"]) == ("SQS", "ListQueues")
