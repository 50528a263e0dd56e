"""The task worker (tasks extension): its queue, DLQ, mapping, permissions and the endpoint's
side of it, in the synthesized template; and the ``tasks`` context key that leaves it out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_platform.config import EnvVars
from stacks.config import ContextError, PlatformConfig
from stacks.deployment import LIVE_ALIAS
from stacks.tasks import VISIBILITY_TIMEOUT_S, WORKER_TIMEOUT_S
from tests.infra.synth import Synthesized, synthesize

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]
WORKER = "task_worker.lambda_handler"


def function(s: Synthesized, handler: str) -> tuple[str, dict[str, Any]]:
    return next(
        (k, v["Properties"])
        for k, v in s.resources("AWS::Lambda::Function").items()
        if v["Properties"]["Handler"] == handler
    )


def task_queue(s: Synthesized) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (k, v["Properties"]) for k, v in s.resources("AWS::SQS::Queue").items() if "RedrivePolicy" in v["Properties"]
    ]
    return found


def statements_of(s: Synthesized, function_id: str) -> list[dict[str, Any]]:
    role = function(s, WORKER)[1]["Role"]["Fn::GetAtt"][0] if function_id == "worker" else function_id
    return [
        statement
        for policy in s.resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_the_worker_runs_the_endpoint_code_from_its_own_queue(variant: Synthesized) -> None:
    # Then one SQS mapping feeds the worker one task per invocation, with partial batch responses
    worker_id, worker = function(variant, WORKER)
    _, endpoint = function(variant, "run.sh")
    assert worker["Code"] == endpoint["Code"]  # the same asset: a task runs the tool the endpoint listed
    assert worker["Timeout"] == WORKER_TIMEOUT_S == 900
    queue_id, queue = task_queue(variant)
    (mapping,) = [
        m["Properties"]
        for m in variant.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    ]
    assert variant.invoked(mapping["FunctionName"]) == (worker_id, LIVE_ALIAS)  # the trigger invokes the alias
    assert mapping["BatchSize"] == 1
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # A message is never redelivered while its worker may still run it; then the DLQ.
    assert queue["VisibilityTimeout"] == VISIBILITY_TIMEOUT_S > WORKER_TIMEOUT_S
    dlq = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == 3 + 2  # past the worker's own 3 attempts
    assert "KmsMasterKeyId" in queue and "KmsMasterKeyId" in variant.resources("AWS::SQS::Queue")[dlq]["Properties"]


def test_the_worker_dlq_alarms_and_the_dashboard_shows_the_worker(variant: Synthesized) -> None:
    _, queue = task_queue(variant)
    dlq = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    alarms = [a["Properties"] for a in variant.resources("AWS::CloudWatch::Alarm").values()]
    watched = [
        json.dumps(a.get("Dimensions", []))
        for a in alarms
        if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"
    ]
    assert any(dlq in dims for dims in watched)
    worker_id, _ = function(variant, WORKER)
    errors = [a for a in alarms if a.get("MetricName") == "Errors" and worker_id in json.dumps(a["Dimensions"])]
    assert len(errors) == 1
    (dashboard,) = variant.resources("AWS::CloudWatch::Dashboard").values()
    assert worker_id in json.dumps(dashboard["Properties"]["DashboardBody"])


def test_the_endpoint_only_sends_to_the_queue_and_knows_its_url(variant: Synthesized) -> None:
    queue_id, _ = task_queue(variant)
    _, endpoint = function(variant, "run.sh")
    env = endpoint["Environment"]["Variables"]
    assert env[EnvVars.TASK_QUEUE_URL] == {"Ref": queue_id}
    endpoint_role = endpoint["Role"]["Fn::GetAtt"][0]
    on_queue = [s for s in statements_of(variant, endpoint_role) if queue_id in json.dumps(s.get("Resource"))]
    actions = {a for s in on_queue for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert actions and all(
        a.startswith("sqs:Send") or a == "sqs:GetQueueAttributes" or a == "sqs:GetQueueUrl" for a in actions
    )


def test_the_worker_has_the_endpoint_environment_without_the_web_adapter(variant: Synthesized) -> None:
    _, worker = function(variant, WORKER)
    _, endpoint = function(variant, "run.sh")
    worker_env, endpoint_env = worker["Environment"]["Variables"], endpoint["Environment"]["Variables"]
    assert not any(k.startswith(("AWS_LWA_", "AWS_LAMBDA_EXEC_WRAPPER")) for k in worker_env)
    assert worker_env[EnvVars.SESSION_TABLE] == endpoint_env[EnvVars.SESSION_TABLE]
    assert worker_env[EnvVars.EVENT_STREAM] == endpoint_env[EnvVars.EVENT_STREAM]
    assert worker_env[EnvVars.TASK_MAX_ATTEMPTS] == endpoint_env[EnvVars.TASK_MAX_ATTEMPTS] == "3"
    assert "ReservedConcurrentExecutions" not in worker  # unreserved unless the context asks


def test_tasks_off_leaves_out_the_worker_and_its_queues(tmp_path_factory: pytest.TempPathFactory) -> None:
    off = synthesize(tmp_path_factory.mktemp("tasks-off"), {"tasks": "false", "dax": "false"})
    handlers = {f["Properties"]["Handler"] for f in off.resources("AWS::Lambda::Function").values()}
    assert WORKER not in handlers
    assert not [q for q in off.resources("AWS::SQS::Queue").values() if "RedrivePolicy" in q["Properties"]]
    _, endpoint = function(off, "run.sh")
    assert EnvVars.TASK_QUEUE_URL not in endpoint["Environment"]["Variables"]


@pytest.mark.parametrize(
    ("key", "value"), [("task_max_attempts", 0), ("task_worker_concurrency", "many"), ("tasks", "maybe")]
)
def test_task_context_keys_are_validated(key: str, value: Any) -> None:
    with pytest.raises(ContextError, match=f"'{key}'"):
        PlatformConfig.from_context({key: value}.get)


def test_reserved_concurrency_by_context() -> None:
    assert PlatformConfig.from_context({"task_worker_concurrency": "20"}.get).task_worker_concurrency == 20
    assert PlatformConfig.from_context({}.get).task_worker_concurrency is None
