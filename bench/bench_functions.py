"""Cold starts of the event functions (ingest, audit, the task worker), counted in instructions.

Each function starts as on Lambda: its code asset as the task root (the task worker's is the
endpoint's, serving the platform's own tools), the layer as synth bundles it (bytecode included,
none written), boto3 from the runtime; bench/cold_event.py imports the handler module and
invokes it once with a one-record batch, its AWS calls answered by a zero-latency stub on
loopback. valgrind's callgrind counts the whole process: repeatable whatever else the machine
runs (0 when valgrind is missing). No peer: these rows are compared across commits (the
decision record keeps the figures before and after a change).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from bench_endpoint import _aws_stub, _deployed_layer, _staged_endpoint
from common import ROOT, callgrind_millions, row

COLD_EVENT = Path(__file__).resolve().parent / "cold_event.py"
# What Lambda's managed runtime provides beside the layer (boto3), as make test installs it.
RUNTIME = ROOT / "build" / "lambda-runtime"


def cold_start_rows() -> list[dict[str, Any]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_", "POWERTOOLS_"))}
    with (
        _aws_stub() as aws_url,
        _deployed_layer() as layer,
        tempfile.TemporaryDirectory(prefix="bench-functions-") as scratch,
    ):
        endpoint_root = _staged_endpoint(Path(scratch))
        env = {
            **base,
            "PYTHONDONTWRITEBYTECODE": "1",  # code and layers are read-only on Lambda
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ENDPOINT_URL": aws_url,
            "AWS_LAMBDA_FUNCTION_NAME": "bench",
            "SESSION_TABLE_NAME": "bench",
            "AUDIT_TABLE_NAME": "bench-audit",
            "EVENT_STREAM_NAME": "bench",
            "MCP_TASK_QUEUE_URL": f"{aws_url}/{'1' * 12}/tasks",
            "PRODUCER_DLQ_URL": f"{aws_url}/{'1' * 12}/producer-dlq",
            "MCP_LOG_LEVEL": "INFO",
        }
        roots = {"ingest": ROOT / "functions/ingest", "audit": ROOT / "functions/audit", "worker": endpoint_root}
        counted = {}
        for function, task_root in roots.items():
            path = f"{task_root}:{layer}:{RUNTIME}:{COLD_EVENT.parent}"
            service = {"ingest": "mcp-ingest", "audit": "mcp-audit", "worker": "mcp-task-worker"}[function]
            counted[function] = callgrind_millions(
                COLD_EVENT, function, cwd=task_root, env={**env, "PYTHONPATH": path, "MCP_SERVICE_NAME": service}
            )
    note = (
        "process start to the first one-record batch answered (bench/cold_event.py: the handler module's import, "
        "then one invocation; AWS calls to a loopback stub) under valgrind's callgrind; 0 when valgrind is missing"
    )
    names = {"ingest": "ingest (Kinesis)", "audit": "audit (DynamoDB Streams)", "worker": "task worker (SQS)"}
    return [
        row(
            f"cold start to first batch answered, {names[function]}, instructions",
            counted[function],
            None,
            "M instr",
            note,
        )
        for function in roots
    ]


def run() -> list[dict[str, Any]]:
    return cold_start_rows()
