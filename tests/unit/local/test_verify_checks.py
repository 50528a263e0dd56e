"""The verify command's checks that need no running endpoint: the alarms read from the stack's
resources (a firing alarm fails, a new one without data is reported, no stack is a skip), the SSE
reading of a streamed answer, and the report's verdict. The endpoint checks run against the local
platform (tests/integration/local/test_local_verify_e2e.py, test_local_trace_e2e.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from local.bootstrap import LocalOptions
from mcp_platform.ops.verify import FAIL, PASS, SKIP, Check, Reply, Report, Verifier, VerifyOptions


class StackResources:
    """list_stack_resources as CloudFormation pages it: the stack's alarms among other resources."""

    def __init__(self, alarms: list[str]) -> None:
        self._alarms = alarms

    def get_paginator(self, operation: str) -> Any:
        assert operation == "list_stack_resources"
        resources = [{"ResourceType": "AWS::SQS::Queue", "PhysicalResourceId": "https://sqs/q"}]
        resources += [{"ResourceType": "AWS::CloudWatch::Alarm", "PhysicalResourceId": name} for name in self._alarms]

        class Pages:
            def paginate(self, StackName: str) -> list[dict[str, Any]]:
                assert StackName == "McpPlatform-prod"
                return [{"StackResourceSummaries": resources[:2]}, {"StackResourceSummaries": resources[2:]}]

        return Pages()


class Alarms:
    def __init__(self, states: dict[str, str]) -> None:
        self.states = states
        self.asked: list[list[str]] = []

    def describe_alarms(self, AlarmNames: list[str]) -> dict[str, Any]:
        self.asked.append(AlarmNames)
        return {"MetricAlarms": [{"AlarmName": n, "StateValue": self.states[n]} for n in AlarmNames]}


def alarms_check(states: dict[str, str], stack: str | None = "McpPlatform-prod") -> Check:
    clients = {"cloudformation": StackResources(list(states)), "cloudwatch": Alarms(states)}
    verifier = Verifier(VerifyOptions(url="http://127.0.0.1:1/mcp", key="k", stack=stack), {}, clients.__getitem__)
    checks = {check.name: check for check in verifier.run().checks}
    return checks["alarms"]


def test_an_alarm_in_alarm_fails_the_check_by_name() -> None:
    check = alarms_check({"prod-EndpointErrorRate-1": "ALARM", "prod-IngestErrors-2": "OK"})
    assert check.status == FAIL
    assert check.detail == "1 of 2 in ALARM: prod-EndpointErrorRate-1"


def test_alarms_without_data_yet_pass_and_are_counted() -> None:
    """A fresh deployment's alarms have not been evaluated: reported, not failed."""
    check = alarms_check({"a": "OK", "b": "INSUFFICIENT_DATA", "c": "OK"})
    assert check.status == PASS
    assert check.detail == "2 of 3 OK, 1 not evaluated yet (INSUFFICIENT_DATA)"


def test_without_a_stack_the_alarms_are_not_checked_and_the_line_says_why() -> None:
    check = alarms_check({"a": "ALARM"}, stack=None)
    assert check.status == SKIP
    assert check.detail.startswith("not checked: no --stack")


def test_an_unreachable_endpoint_fails_its_checks_and_the_report() -> None:
    """Nothing listens on port 1: the endpoint checks fail with the error, those that need their
    calls are skipped, and the report's verdict is a failure."""
    verifier = Verifier(VerifyOptions(url="http://127.0.0.1:1/mcp", key="k", timeout_s=2), {}, lambda _: None)
    report = verifier.run()
    statuses = {check.name: check.status for check in report.checks}
    assert statuses["health"] == statuses["2025"] == statuses["2026"] == FAIL
    assert statuses["ingest"] == statuses["dlq"] == SKIP
    assert report.passed is False
    assert report.as_json()["passed"] is False


def test_a_streamed_answer_is_read_event_by_event() -> None:
    body = (
        b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0}}\n\n'
        b": keep-alive\n\n"
        b'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n\n'
    )
    reply = Reply(200, {"content-type": "text/event-stream"}, body)
    assert [m.get("method") for m in reply.messages()] == ["notifications/progress", None]
    assert reply.result(7) == {"content": []}


def test_an_error_answer_is_the_checks_failure() -> None:
    reply = Reply(200, {"content-type": "application/json"}, b'{"jsonrpc":"2.0","id":3,"error":{"code":-32602}}')
    with pytest.raises(Exception, match="-32602"):
        reply.result(3)


def test_a_report_passes_with_skips_and_fails_with_one_failure() -> None:
    assert Report("u", (Check("a", PASS, ""), Check("b", SKIP, ""))).passed
    assert not Report("u", (Check("a", PASS, ""), Check("b", FAIL, ""))).passed


def test_disabled_mappings_name_a_function_whole_or_by_its_last_word() -> None:
    options = LocalOptions.from_env(attach=False)
    disabled = dataclasses.replace(options, disabled_mappings=("ingest",))
    assert disabled.mapping_disabled("mcp-dev-processing-ingest")
    assert not disabled.mapping_disabled("mcp-dev-processing-audit")
    assert not disabled.mapping_disabled("mcp-dev-processing-reingest")
    assert not options.mapping_disabled("mcp-dev-processing-ingest")
