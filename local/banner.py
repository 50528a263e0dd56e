"""The start-up output: what runs where, and copy-paste commands to connect and inspect."""

from __future__ import annotations

import os

from local.dax_cluster import endpoint_url as dax_endpoint_url
from local.platform import Running
from mcp_platform.config import EnvVars


def render(running: Running) -> str:
    options, plan, attributes = running.options, running.plan, running.attributes
    url = options.mcp_url
    aws = f"aws --endpoint-url {options.aws_endpoint} --region {options.region}"
    header = f'--header "Authorization: Bearer {running.api_key}"' if running.api_key else ""
    facade = bool(running.environment.get(EnvVars.OAUTH_FACADE_KEYS_SECRET))
    if not header and "oauth" in running.auth_mode.split(",") and not facade:
        header = '--header "Authorization: Bearer $TOKEN"'  # a token from the issuer (python -m local.oauth_issuer)
    mode = "second endpoint attached to the running emulator" if options.attach else "local platform"
    lines = [
        "",
        f"MCP platform ({mode}) is ready in {running.startup_seconds:.1f} s "
        f"(template synthesized in {running.synth_seconds:.1f} s, stage {plan.stage})",
        "",
        f"  MCP endpoint   {url}   (health: http://127.0.0.1:{options.mcp_port}/healthz)",
        f"  AWS emulator   {options.aws_endpoint}   (moto, region {options.region})"
        + ("   [attached, not started here]" if options.attach else ""),
        f"  DAX item cache {dax_endpoint_url(options.aws_endpoint)}   (one for every instance on the emulator)",
    ]
    if running.api_key:
        lines.append(f"  API key        {running.api_key}   (principal local-developer; MCP_API_KEY fixes it)")
    if "oauth" in running.auth_mode.split(","):
        issuer = running.environment.get(EnvVars.OAUTH_ISSUER) or os.environ.get(EnvVars.OAUTH_ISSUER, "")
        lines.append(f"  OAuth          issuer {issuer}; tokens need aud {url} (or MCP_OAUTH_AUDIENCE)")
        lines.append(f"  Metadata       http://127.0.0.1:{options.mcp_port}/.well-known/oauth-protected-resource/mcp")
        if facade:
            from local.oauth_issuer import DEV_USER

            origin = f"http://127.0.0.1:{options.mcp_port}"
            lines.append(
                f"  OAuth facade   {origin}/.well-known/oauth-authorization-server (register, authorize, token):"
                f" clients sign in with no registration; the user is {DEV_USER} at {issuer}"
            )
    elif not running.api_key:
        lines.append(f"  Auth           {running.auth_mode} (loopback only: no key needed)")
    limits = running.environment.get(EnvVars.RATE_LIMITS, "")
    quotas = running.environment.get(EnvVars.QUOTAS, "")
    if limits or quotas:  # from the template: MCP_RATE_LIMITS / MCP_QUOTAS became its context
        lines.append(
            f"  Governance     rate limits {limits or 'none'}; quotas {quotas or 'none'}   (python -m local.ops usage)"
        )
    reload = f"reloaded on change, checked every {options.reload_s:g} s" if options.reload_s else "reload off"
    lines.append(f"  Features       {options.features_dir}   ({reload}; LOCAL_RELOAD_SECONDS)")
    if options.fixtures:
        lines.append(f"  Fixtures       {', '.join(options.fixtures)} (local/fixtures.py; never deployed)")
    lines += ["", "  Resources (from the synthesized template):"]
    lines += [f"    table     {t.name}" for t in plan.tables]
    lines += [f"    stream    {s.name}" for s in plan.streams]
    lines += [f"    consumer  {c.name}  ({attributes[c.logical_id]['ConsumerARN']})" for c in plan.consumers]
    lines += [f"    queue     {q.name}" for q in plan.queues]
    if running.pollers:
        lines += ["", "  Event source mappings (local pollers):"]
        queues = {q.logical_id: q for q in plan.queues}
        for spec in plan.mappings:
            function = plan.function(spec.function_logical_id)
            if spec.logical_id in running.disabled_mappings:
                lines.append(f"    {function.name}  <- {spec.source_logical_id}  DISABLED (LOCAL_DISABLED_MAPPINGS)")
                continue
            head = f"    {function.name}  <- {spec.source_logical_id}  handler {running.handlers.get(spec.logical_id)}"
            queue = queues.get(spec.source_logical_id)
            if queue is not None:  # an SQS source: retries and DLQ are the queue's redrive policy
                lines.append(
                    f"{head}  batch {spec.batch_size}, {len(running.queue_pollers)} environments,"
                    f" visibility {queue.visibility_timeout_s} s, DLQ"
                    f" {_queue_name(running, queue.dead_letter_logical_id)} after {queue.max_receive_count} receives"
                )
                continue
            lines.append(
                f"{head}  batch {spec.batch_size}, retries {spec.max_retries}, bisect {spec.bisect_on_error},"
                f" DLQ {_queue_name(running, spec.on_failure_logical_id)}"
            )
    if running.sweepers:
        lines += ["", "  TTL expiry (emulated, LOCAL_TTL_SWEEP_SECONDS; 0 = off):"]
        lines += [
            f"    {sweeper.table_name}  expired items deleted every {sweeper.interval_s:g} s"
            " (REMOVE records with principal dynamodb.amazonaws.com)"
            for sweeper in running.sweepers
        ]
    session_table = plan.tables[0].name if plan.tables else "<table>"
    lines += [
        "",
        "  Connect:",
        f"    npx @modelcontextprotocol/inspector@0.22.0 --cli {url} --transport http {header} --method tools/list",
        f"    claude mcp add --transport http local-mcp {url} {header}".rstrip(),
        "    Python SDK: see 'Connect a client' in README.md",
        "",
        "  Inspect:",
        f"    {aws} dynamodb scan --table-name {session_table}",
        f"    {aws} sqs list-queues",
        f"    {aws} kinesis list-shards --stream-name {plan.streams[0].name if plan.streams else '<stream>'}",
        f"    LOCAL_AWS_PORT={options.aws_port} python -m local.trace <trace id>"
        "   (one call's journey: endpoint log, Kinesis, ingest, audit)",
        "",
        "  Calls:  a line per call below (method, tool, status, duration, trace id); the endpoint's",
        f"          EMF and JSON lines as deployed: {options.endpoint_log}",
    ]
    if not options.attach:
        attach = f"LOCAL_AWS_PORT={options.aws_port} python -m local --attach"
        lines += ["", f"  Second endpoint:  make dev-second   (or {attach})"]
    every = f"every {options.health_s:g} s (LOCAL_HEALTH_SECONDS) and " if options.health_s else ""
    lines += ["", f"  Health:  a 'health:' line {every}on `kill -USR1 {os.getpid()}`"]
    lines += ["", "Ctrl-C stops everything.", ""]
    return "\n".join(lines)


def _queue_name(running: Running, logical_id: str | None) -> str:
    if logical_id is None:
        return "none"
    return running.attributes[logical_id]["QueueName"]
