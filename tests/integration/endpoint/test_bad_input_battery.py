"""The bad-input battery: a generated corpus of hostile and careless requests, both eras, every
method the server serves and every tool, resource template and prompt it lists, spread over two
endpoint instances on one emulator.

The corpus is grouped (era x method, one group per tool) so every group is exercised whatever
the count; each group also replays the exact requests of issue 12 that concern it. Properties,
over the whole corpus: no 5xx, no -32603, no error or traceback logged, both instances healthy
afterwards (``/healthz`` and a normal session call), and every change stored in the session
table processed by the audit function's logic (none would reach the audit DLQ).

Fixed seed (``derandomize``), no example database, a bounded count per group. A larger run::

    BAD_INPUT_EXAMPLES=100 .venv/bin/python -m pytest -q tests/integration/endpoint/test_bad_input_battery.py
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcp_platform.auth.api_keys import ApiKeyStore
from mcp_platform.mcp.jsonrpc import INTERNAL_ERROR
from tests.support.audit_stream import KEY_SCHEMA, audit_everything
from tests.support.aws import fake_credentials
from tests.support.bad_input import Case, body, groups, send
from tests.support.endpoint import AwsStack, Instance, aws_stack, endpoint_instance
from tests.support.hostile import modern_headers, post
from tests.support.mcp_http import CAPS_META, final_message, initialize, sse_messages

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = int(os.environ.get("BAD_INPUT_EXAMPLES", "8"))  # per group (26 groups)


@pytest.fixture()
def aws() -> Iterator[AwsStack]:
    """A fresh emulator per run: the corpus's writes stay out of other tests' tables."""
    with fake_credentials(), aws_stack() as stack:
        stack.client("dynamodb").create_table(TableName=f"{stack.table}-audit", **KEY_SCHEMA)
        yield stack


@pytest.fixture()
def pair(aws: AwsStack) -> Iterator[tuple[Instance, Instance]]:
    options = {"MCP_MAX_REQUEST_BYTES": "1048576", "AUDIT_TABLE_NAME": f"{aws.table}-audit"}
    with endpoint_instance(aws, **options) as a, endpoint_instance(aws, **options) as b:
        yield a, b


def modern_request(instance: Instance, key: str, method: str, params: dict[str, Any]) -> httpx.Response:
    return post(instance.url, modern_headers(key, method, params), body(9, method, params))


def tool_call(instance: Instance, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
    return final_message(modern_request(instance, key, "tools/call", params))


def check_answer(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.content:
        for message in sse_messages(response):
            assert message.get("error", {}).get("code") != INTERNAL_ERROR, message


def healthy(instance: Instance, key: str) -> None:
    assert httpx.get(instance.url.replace("/mcp", "/healthz")).status_code == 200
    handle = tool_call(instance, key, "open_session", {})["result"]["structuredContent"]["session"]
    appended = tool_call(instance, key, "append_note", {"session": handle, "text": "after"})
    assert appended["result"]["isError"] is False, appended
    read = tool_call(instance, key, "read_notes", {"session": handle})
    assert read["result"]["structuredContent"]["notes"] == [{"role": "note", "text": "after"}]


def run_group(strategy: st.SearchStrategy[Case], reported: list[Case], one: Callable[[Case], None]) -> None:
    run = given(strategy)(one)
    for item in reported:
        run = example(item)(run)
    settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )(run)()


def test_generated_bad_input_never_breaks_either_instance_or_the_audit(
    aws: AwsStack, pair: tuple[Instance, Instance], caplog: pytest.LogCaptureFixture
) -> None:
    key = ApiKeyStore(aws.table, aws.client("dynamodb")).mint("alice")
    a, b = pair

    def listing(method: str, field: str) -> list[dict[str, Any]]:
        response = modern_request(a, key, method, {"_meta": CAPS_META})
        assert response.status_code == 200, response.text
        return list(response.json()["result"][field])

    opened = [tool_call(a, key, "open_session", {})["result"]["structuredContent"]["session"] for _ in range(2)]
    offer = {
        "tools": listing("tools/list", "tools"),
        "templates": listing("resources/templates/list", "resourceTemplates"),
        "prompts": listing("prompts/list", "prompts"),
        "handles": [*opened, "A" * 32, "x" * 3000, "short"],
    }
    transport = [initialize(a.url, key), initialize(b.url, key)]
    sent = [0]

    def one_request(item: Case) -> None:
        instance = pair[sent[0] % 2]
        sent[0] += 1
        check_answer(send(instance, key, item, transport[sent[0] % 2]))

    caplog.set_level(logging.WARNING)
    corpus = groups(offer)
    for _, strategy, reported in corpus:
        run_group(strategy, reported, one_request)
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not logged, [f"{r.name}: {r.getMessage()}" for r in logged[:5]]
    healthy(a, key)
    healthy(b, key)
    outcomes = audit_everything(aws)  # raises on a record the audit function could not process
    assert len(corpus) >= 2 * len(offer["tools"]) and sent[0] > len(corpus) and outcomes
