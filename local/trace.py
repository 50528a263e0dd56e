"""`python -m local.trace <trace-id>`: one trace's journey through a running `make dev`.

A call's trace id (the ``trace`` of its line on the `make dev` console, or the one a client
sent in ``traceparent``) finds, in the order a call travels:

1. endpoint: the endpoint's log lines of the trace, EMF and JSON as deployed, from its log file
   (local/endpoint_log.py; the task worker's lines too, it runs in the same process);
2. kinesis: the tool-call events on the stream that name it;
3. ingest: the session-table items that name it: the tool-call record (written by the
   endpoint's commit for a session tool, else by ingest), its idempotency marker, ingest's
   dedupe marker, a task, and the session's metadata while its last commit is the trace's;
4. audit: the audit records of the session changes the trace's requests made.

Each stage is read as it is now: the pipeline is asynchronous, so a call a moment old may not
have reached ingest or the audit yet. Reads scan the emulator (a local table is small); the
emulator is found as `python -m local.ops` finds it (LOCAL_AWS_PORT, LOCAL_LOG_DIR).
Exit status: 0 when something names the trace, 1 when nothing does, 2 for a malformed id.
"""

from __future__ import annotations

import argparse
import sys

from local.bootstrap import add_import_roots


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m local.trace", description=__doc__.splitlines()[0])
    parser.add_argument("trace_id", help="32 lower-case hex digits (the `trace` of a call's console line)")
    args = parser.parse_args(argv)
    add_import_roots()  # the trace id's check imports no AWS SDK: before the emulator is looked up
    from mcp_platform.protocol import trace_context

    if not trace_context.is_trace_id(args.trace_id):
        print(f"not a trace id: {args.trace_id!r} (32 lower-case hex digits, not all zeros)", file=sys.stderr)
        return 2
    from local.ops import operations_environment

    options, env = operations_environment()
    from local.journey import audit_records, endpoint_lines, render, stream_events, table_items
    from mcp_platform.adapters.aws_clients import aws_client
    from mcp_platform.config import Settings

    settings = Settings.from_mapping(env)
    dynamodb, kinesis = aws_client("dynamodb", settings), aws_client("kinesis", settings)
    sections = [
        (f"endpoint log ({options.run_dir})", endpoint_lines(args.trace_id, options.run_dir)),
        (f"kinesis ({settings.event_stream})", stream_events(kinesis, settings.event_stream, args.trace_id)),
        (
            f"ingest: session table ({settings.session_table})",
            table_items(dynamodb, settings.session_table, args.trace_id),
        ),
        (f"audit ({settings.audit_table})", audit_records(dynamodb, settings.audit_table, args.trace_id)),
    ]
    print(render(args.trace_id, sections))
    return 0 if any(steps for _, steps in sections) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
