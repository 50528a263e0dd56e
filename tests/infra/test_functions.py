"""Endpoint (S1, S8), processing (A1, A5, K5), DLQs, runtime and architecture in the template."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_platform.config import EnvVars
from stacks.config import ContextError
from stacks.endpoint import IGNORE_STAGE_IN_PATH
from stacks.endpoint import MEMORY_MB as ENDPOINT_MB
from stacks.processing import MEMORY_MB as PROCESSING_MB
from stacks.runtime import WEB_ADAPTER_ACCOUNT
from tests.infra.iam import granted_logical_ids, referenced_logical_ids, role_statements
from tests.infra.synth import Synthesized, synthesize

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

PLATFORM_ENV = {v for k, v in vars(EnvVars).items() if k.isupper()}
WEB_ADAPTER_ENV = {
    "AWS_LAMBDA_EXEC_WRAPPER",
    "AWS_LWA_INVOKE_MODE",
    "AWS_LWA_READINESS_CHECK_PATH",
    "AWS_LWA_PORT",
    IGNORE_STAGE_IN_PATH,  # edge=api_gateway: the adapter's request library
}
HANDLERS = {"run.sh", "ingest_handler.lambda_handler", "audit_handler.lambda_handler", "task_worker.lambda_handler"}


def platform_functions(s: Synthesized) -> dict[str, dict]:
    return {k: v for k, v in s.resources("AWS::Lambda::Function").items() if v["Properties"].get("Handler") in HANDLERS}


def function_by_handler(s: Synthesized, handler: str) -> dict:
    return next(f["Properties"] for f in platform_functions(s).values() if f["Properties"]["Handler"] == handler)


def test_every_function_and_the_layer_run_the_python_the_tests_run(variant: Synthesized) -> None:
    # Given .python-version, the one place that names the runtime's Python (the Makefile builds
    # the test venv and the layer with it)
    python = (ROOT / ".python-version").read_text().strip()
    running = ".".join(map(str, sys.version_info[:2]))
    # Then the tests themselves run on it, and every function and the layer target it
    assert running == python, f"the tests run on Python {running}, the functions on {python}: make test"
    functions = platform_functions(variant)
    assert {f["Properties"]["Handler"] for f in functions.values()} == HANDLERS
    assert {f["Properties"]["Runtime"] for f in functions.values()} == {f"python{python}"}
    assert variant.one("AWS::Lambda::LayerVersion")["Properties"]["CompatibleRuntimes"] == [f"python{python}"]


def test_lambda_python_context_key_names_the_runtime(tmp_path: Path) -> None:
    # Given an explicit runtime / Then every function uses it; an unsupported one fails synth
    s = synthesize(tmp_path / "py312", {"lambda_python": "3.12", "dax": "false", "tasks": "false"})
    assert {f["Properties"]["Runtime"] for f in platform_functions(s).values()} == {"python3.12"}
    with pytest.raises(ContextError, match="lambda_python"):
        synthesize(tmp_path / "py27", {"lambda_python": "2.7"})


def test_arm64_by_default_x86_64_by_context(default: Synthesized, alt: Synthesized) -> None:
    # Given the default and the x86_64 variant / Then functions and the layer follow the architecture
    for s, arch in ((default, "arm64"), (alt, "x86_64")):
        assert {tuple(f["Properties"]["Architectures"]) for f in platform_functions(s).values()} == {(arch,)}
        assert s.one("AWS::Lambda::LayerVersion")["Properties"]["CompatibleArchitectures"] == [arch]
        layers = json.dumps(function_by_handler(s, "run.sh")["Layers"])
        adapter = "LambdaAdapterLayerArm64" if arch == "arm64" else "LambdaAdapterLayerX86"
        assert f":{WEB_ADAPTER_ACCOUNT}:layer:{adapter}:" in layers


def test_s1_function_url_streams_through_the_web_adapter(variant: Synthesized) -> None:
    # Then the URL streams (with edge=api_gateway there is none: the API's integration streams)
    # and the adapter is configured to stream on the same port it probes
    if variant.stack.config.edge == "api_gateway":
        assert not variant.resources("AWS::Lambda::Url")
        methods = variant.resources("AWS::ApiGateway::Method").values()
        assert {m["Properties"]["Integration"]["ResponseTransferMode"] for m in methods} == {"STREAM"}
    else:
        url = variant.one("AWS::Lambda::Url")["Properties"]
        assert url["InvokeMode"] == "RESPONSE_STREAM"
        assert url["AuthType"] == "NONE"  # the app does bearer/OAuth auth itself (default deny)
    env = function_by_handler(variant, "run.sh")["Environment"]["Variables"]
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert env["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert env["AWS_LWA_READINESS_CHECK_PATH"] == "/healthz"
    assert env["AWS_LWA_PORT"] == "8080"


def test_s7_stream_cap_below_function_timeout(variant: Synthesized) -> None:
    endpoint = function_by_handler(variant, "run.sh")
    env = endpoint["Environment"]["Variables"]
    assert int(env[EnvVars.KEEPALIVE_SECONDS]) < int(env[EnvVars.STREAM_MAX_SECONDS]) < endpoint["Timeout"]


def test_s8_cors_allow_list_never_wildcard(default: Synthesized, alt: Synthesized) -> None:
    # Given no origins (default): no CORS at all; given an allow-list (alt): exactly those origins
    assert "Cors" not in default.one("AWS::Lambda::Url")["Properties"]
    cors = alt.one("AWS::Lambda::Url")["Properties"]["Cors"]
    assert cors["AllowOrigins"] == ["https://app.example.com", "http://localhost:6274"]
    assert "*" not in json.dumps(cors)
    env = function_by_handler(alt, "run.sh")["Environment"]["Variables"]
    assert env[EnvVars.ALLOWED_ORIGINS] == "https://app.example.com,http://localhost:6274"


def test_functions_set_only_the_env_vars_the_code_reads(variant: Synthesized) -> None:
    # Then every variable is one of mcp_platform.config.EnvVars, the Web Adapter's own, or one the
    # app's CDK hook set to name one of the app's own resources (stacks/app_resources.py)
    for fn in platform_functions(variant).values():
        variables = fn["Properties"]["Environment"]["Variables"]
        unknown = set(variables) - PLATFORM_ENV - WEB_ADAPTER_ENV - set(app_variables(variant, variables))
        assert not unknown, unknown
        assert EnvVars.SESSION_TABLE in variables


def app_variables(s: Synthesized, variables: dict[str, Any]) -> dict[str, set[str]]:
    """The variables whose value names a resource of the app's construct (logical id App...)."""
    app_ids = {logical_id for logical_id in s.json["Resources"] if logical_id.startswith("App")}
    named = {name: referenced_logical_ids(value) & app_ids for name, value in variables.items()}
    return {name: ids for name, ids in named.items() if ids}


def test_the_apps_own_resources_reach_the_endpoint_and_the_worker_and_not_the_pipeline(default: Synthesized) -> None:
    # Given the starter app's hook (functions/endpoint/app_resources.py): its bookmarks table
    (table_id,) = [k for k in default.resources("AWS::DynamoDB::Table") if k.startswith("AppBookmarks")]
    table = default.json["Resources"][table_id]["Properties"]
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    # Then both functions that run the tools have it in their environment and may call exactly
    # what the tools call on it; ingest and audit know nothing of it
    for handler in ("run.sh", "task_worker.lambda_handler"):
        fn = next(f for f in platform_functions(default).values() if f["Properties"]["Handler"] == handler)
        assert app_variables(default, fn["Properties"]["Environment"]["Variables"]) == {"BOOKMARKS_TABLE": {table_id}}
        actions = {
            action
            for statement in role_statements(default, fn)
            if table_id in referenced_logical_ids(statement.get("Resource"))
            for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
        }
        assert actions == {"dynamodb:PutItem", "dynamodb:Query"}
    for handler in ("ingest_handler.lambda_handler", "audit_handler.lambda_handler"):
        fn = next(f for f in platform_functions(default).values() if f["Properties"]["Handler"] == handler)
        assert table_id not in granted_logical_ids(default, fn)
        assert not app_variables(default, fn["Properties"]["Environment"]["Variables"])


def test_the_apps_cdk_hook_is_not_shipped_in_the_functions_code(default: Synthesized) -> None:
    # Given the endpoint's staged code asset: the tools are there, the CDK hook is not
    asset = next(p for p in default.template_path.parent.glob("asset.*") if (p / "run.sh").is_file())
    assert (asset / "mcp_tools" / "bookmarks.py").is_file()
    assert not (asset / "app_resources.py").exists()


def test_x3_x5_dax_endpoint_env_follows_dax_switch(default: Synthesized, alt: Synthesized) -> None:
    on = function_by_handler(default, "run.sh")["Environment"]["Variables"][EnvVars.DAX_ENDPOINT]
    assert on == {"Fn::GetAtt": [next(iter(default.resources("AWS::DAX::Cluster"))), "ClusterDiscoveryEndpointURL"]}
    assert function_by_handler(alt, "run.sh")["Environment"]["Variables"][EnvVars.DAX_ENDPOINT] == ""


def test_endpoint_in_vpc_only_with_dax(default: Synthesized, alt: Synthesized) -> None:
    assert function_by_handler(default, "run.sh")["VpcConfig"]["SubnetIds"]
    assert "VpcConfig" not in function_by_handler(alt, "run.sh")


def test_a1_a5_event_source_mappings(variant: Synthesized) -> None:
    # Then both stream mappings (Kinesis EFO and table stream) retry, bisect, report and dead-letter
    all_mappings = variant.resources("AWS::Lambda::EventSourceMapping").values()
    mappings = [m for m in all_mappings if "StartingPosition" in m["Properties"]]
    assert len(mappings) == 2
    queues = variant.resources("AWS::SQS::Queue")
    for mapping in mappings:
        props = mapping["Properties"]
        assert props["StartingPosition"] == "TRIM_HORIZON"
        assert props["BisectBatchOnFunctionError"] is True
        assert props["MaximumRetryAttempts"] == 3
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert 60 <= props["MaximumRecordAgeInSeconds"] <= 86_400  # bounded, not -1 (infinite)
        assert props["ParallelizationFactor"] == 1  # in order per shard: ingest's checkpoint
        dlq = props["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
        assert dlq in queues
    dlqs = {m["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0] for m in mappings}
    assert len(dlqs) == 2  # one DLQ per mapping


def test_a1_audit_mapping_reads_the_session_table_stream(variant: Synthesized) -> None:
    table_id = next(
        k for k, v in variant.resources("AWS::DynamoDB::Table").items() if "StreamSpecification" in v["Properties"]
    )
    sources = [m["Properties"]["EventSourceArn"] for m in variant.resources("AWS::Lambda::EventSourceMapping").values()]
    assert {"Fn::GetAtt": [table_id, "StreamArn"]} in sources


def test_dlqs_encrypted_14_days_tls_only(variant: Synthesized) -> None:
    # Then five DLQs (producer, ingest, audit, expiry events, task worker), each KMS-encrypted for
    # 14 days; the task queue itself (the one with a redrive policy) is tested in test_tasks.py
    queues = {k: v for k, v in variant.resources("AWS::SQS::Queue").items() if "RedrivePolicy" not in v["Properties"]}
    assert len(queues) == 5
    for queue in queues.values():
        assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
        assert "KmsMasterKeyId" in queue["Properties"]
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"] for p in variant.resources("AWS::SQS::QueuePolicy").values()
    ]
    assert len(policies) == 6  # every queue, the task queue included, is TLS-only
    for statements in policies:
        assert any(s["Effect"] == "Deny" and "aws:SecureTransport" in json.dumps(s) for s in statements)


def test_k2_producer_dlq_url_on_the_endpoint(variant: Synthesized) -> None:
    env = function_by_handler(variant, "run.sh")["Environment"]["Variables"]
    (queue_ref,) = [v for k, v in env.items() if k == EnvVars.PRODUCER_DLQ_URL]
    assert queue_ref["Ref"] in variant.resources("AWS::SQS::Queue")


def test_a4_expiry_events_dlq_url_on_the_audit_function(variant: Synthesized) -> None:
    env = function_by_handler(variant, "audit_handler.lambda_handler")["Environment"]["Variables"]
    assert env[EnvVars.EXPIRY_EVENTS_DLQ_URL]["Ref"] in variant.resources("AWS::SQS::Queue")
    assert env[EnvVars.AUDIT_TABLE]["Ref"] in variant.resources("AWS::DynamoDB::Table")


def test_k7_ingest_dedupe_window_follows_the_stream_retention(default: Synthesized, alt: Synthesized) -> None:
    # Given the default (168 h) and alt (720 h) retention / Then the ingest function is told it,
    # so its dedupe markers outlive every record a TRIM_HORIZON replay can deliver
    for s, hours in ((default, 168), (alt, 720)):
        stream = s.one("AWS::Kinesis::Stream")["Properties"]
        env = function_by_handler(s, "ingest_handler.lambda_handler")["Environment"]["Variables"]
        assert env[EnvVars.EVENT_RETENTION_HOURS] == str(stream["RetentionPeriodHours"]) == str(hours)


@pytest.mark.parametrize(
    ("folder", "handler"), [("ingest", "ingest_handler.lambda_handler"), ("audit", "audit_handler.lambda_handler")]
)
def test_handlers_exist_in_the_function_assets(default: Synthesized, folder: str, handler: str) -> None:
    # Given the handler the template names / Then the module in functions/<folder> defines it
    module, name = handler.split(".")
    tree = ast.parse((ROOT / "functions" / folder / f"{module}.py").read_text())
    assert name in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert function_by_handler(default, handler)


def test_endpoint_handler_script_exists_and_runs_the_served_stack(default: Synthesized) -> None:
    """run.sh serves the app with the one definition of the server's options (what it serves is
    tested in tests/integration/endpoint/test_served_header_limits.py)."""
    run_sh = (ROOT / "functions" / "endpoint" / "run.sh").read_text()
    assert function_by_handler(default, "run.sh")
    assert "exec python3 -m mcp_platform.transport.serving endpoint_app:app" in run_sh and "AWS_LWA_PORT" in run_sh


def test_a3_endpoint_reads_audit_trails_audit_function_writes_them(variant: Synthesized) -> None:
    endpoint_env = function_by_handler(variant, "run.sh")["Environment"]["Variables"]
    audit_env = function_by_handler(variant, "audit_handler.lambda_handler")["Environment"]["Variables"]
    assert endpoint_env[EnvVars.AUDIT_TABLE] == audit_env[EnvVars.AUDIT_TABLE]
    assert audit_env[EnvVars.AUDIT_RETENTION_DAYS] == "365"


def test_k4_endpoint_role_may_read_the_stream_for_recent_tool_events(variant: Synthesized) -> None:
    # Given the endpoint's role / Then it can list shards and read records (recent_tool_events)
    from tests.infra.test_security import as_list

    endpoint_role = function_by_handler(variant, "run.sh")["Role"]["Fn::GetAtt"][0]
    actions: set[str] = set()
    for resource in variant.json["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        if {"Ref": endpoint_role} not in resource["Properties"].get("Roles", []):
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            actions.update(as_list(statement["Action"]))
    assert {"kinesis:GetShardIterator", "kinesis:GetRecords", "kinesis:ListShards"} <= actions


# Resource types whose name, ARN or URL in a function's environment means the function calls it.
CALLED_RESOURCE_TYPES = {
    "AWS::DynamoDB::Table",
    "AWS::Kinesis::Stream",
    "AWS::SQS::Queue",
    "AWS::SecretsManager::Secret",
}


def test_every_resource_a_function_is_told_about_is_granted_to_it(variant: Synthesized) -> None:
    # Given each platform function's environment
    for logical_id, function in platform_functions(variant).items():
        env = function["Properties"]["Environment"]["Variables"]
        # When a variable names a table, stream, queue or secret of the stack
        named = {
            name: referenced_logical_ids(value) & resources_of_types(variant, CALLED_RESOURCE_TYPES)
            for name, value in env.items()
        }
        # Then the function's role has a statement on that resource
        granted = granted_logical_ids(variant, function)
        ungranted = {name: sorted(ids - granted) for name, ids in named.items() if ids - granted}
        assert not ungranted, (
            f"{logical_id} ({function['Properties']['Handler']}) is told about {ungranted} without a grant"
        )


def test_processing_functions_get_only_the_variables_their_code_reads(default: Synthesized) -> None:
    # Then ingest is not told about the audit table or the stream it only reads through its mapping,
    # and the task worker (tasks ask for input through their task item) not about the request-state secret
    ingest = function_by_handler(default, "ingest_handler.lambda_handler")["Environment"]["Variables"]
    assert not {EnvVars.AUDIT_TABLE, EnvVars.EVENT_STREAM, EnvVars.EVENT_STREAM_ARN} & ingest.keys()
    worker = function_by_handler(default, "task_worker.lambda_handler")["Environment"]["Variables"]
    assert EnvVars.REQUEST_STATE_SECRET not in worker
    endpoint = function_by_handler(default, "run.sh")["Environment"]["Variables"]
    assert EnvVars.REQUEST_STATE_SECRET in endpoint


def test_endpoint_reserved_concurrency_is_unset_by_default_and_set_by_context(
    default: Synthesized, tmp_path: Path
) -> None:
    # Given the default / Then the endpoint has no reserved concurrency (a cap is a deliberate choice)
    assert "ReservedConcurrentExecutions" not in function_by_handler(default, "run.sh")
    # Given endpoint_reserved_concurrency=50 (as -c delivers it) / Then the endpoint, and only it, is capped
    capped = synthesize(tmp_path / "capped", {"endpoint_reserved_concurrency": "50", "dax": "false"})
    assert function_by_handler(capped, "run.sh")["ReservedConcurrentExecutions"] == 50
    for handler in ("ingest_handler.lambda_handler", "audit_handler.lambda_handler"):
        assert "ReservedConcurrentExecutions" not in function_by_handler(capped, handler)
    with pytest.raises(ContextError, match="endpoint_reserved_concurrency"):
        synthesize(tmp_path / "bad", {"endpoint_reserved_concurrency": "0"})


def resources_of_types(s: Synthesized, types: set[str]) -> set[str]:
    return {k for k, v in s.json["Resources"].items() if v["Type"] in types}


def test_memory_sizes_are_the_ones_make_bench_prices(variant: Synthesized) -> None:
    # Given the memory sizes the cost-per-million-calls figures are computed at (bench/cost.py)
    # Then the template deploys the endpoint and ingest with exactly those
    assert function_by_handler(variant, "run.sh")["MemorySize"] == ENDPOINT_MB
    assert function_by_handler(variant, "ingest_handler.lambda_handler")["MemorySize"] == PROCESSING_MB


def logging_of(s: Synthesized) -> dict[str, tuple[dict, str]]:
    """Each platform function's LoggingConfig and TracingConfig mode, by handler."""
    return {
        f["Properties"]["Handler"]: (f["Properties"]["LoggingConfig"], f["Properties"]["TracingConfig"]["Mode"])
        for f in platform_functions(s).values()
    }


def test_every_function_logs_json_with_lambdas_own_lines_per_stage_and_passes_traces_through(
    default: Synthesized, alt: Synthesized
) -> None:
    for synthesized, system in ((default, "INFO"), (alt, "WARN")):
        functions = platform_functions(synthesized)
        # Then every function writes JSON, Lambda's START/END/REPORT only in a dev stage (INFO),
        # and what Lambda lets through of its own lines is the level it writes them at, INFO: the
        # EMF lines have no level (INFO to Lambda), and a higher one would drop every metric
        for handler, (logging, tracing) in logging_of(synthesized).items():
            assert logging["LogFormat"] == "JSON", handler
            assert (logging["ApplicationLogLevel"], logging["SystemLogLevel"]) == ("INFO", system), handler
            assert "LogGroup" in logging, handler
            # And X-Ray records a trace only when the caller sampled it
            assert tracing == "PassThrough", handler
        for function in functions.values():
            assert function["Properties"]["Environment"]["Variables"][EnvVars.LOG_LEVEL] == "INFO"


def test_system_log_level_and_tracing_context_keys(tmp_path: Path) -> None:
    # Given a production stage that keeps Lambda's own lines and samples traces
    s = synthesize(
        tmp_path / "traced", {"stage": "prod", "dax": "false", "system_log_level": "info", "tracing": "active"}
    )
    # Then every function says so
    assert {(logging["SystemLogLevel"], tracing) for logging, tracing in logging_of(s).values()} == {("INFO", "Active")}
    # And anything else fails synth, naming the key
    for key, value in (("system_log_level", "ERROR"), ("tracing", "on")):
        with pytest.raises(ContextError, match=key):
            synthesize(tmp_path / key, {key: value, "dax": "false"})


def test_the_cost_model_prices_the_logging_and_tracing_a_production_stage_deploys(alt: Synthesized) -> None:
    from bench import cost

    # Given a production stage's template (make bench prices one: a price per million is a figure
    # for volume) / Then the cost model's Lambda lines and traced share are what it deploys
    assert cost.PRICED.stage == alt.stack.node.try_get_context("stage") == "prod"
    for handler, (logging, tracing) in logging_of(alt).items():
        lambda_lines = 0 if logging["SystemLogLevel"] == "WARN" else cost.LAMBDA_LINES_BYTES
        traced = cost.ACTIVE_TRACED_SHARE if tracing == "Active" else 0.0
        assert (lambda_lines, traced) == (cost.PLATFORM_LOG_BYTES, cost.TRACED_SHARE), handler
