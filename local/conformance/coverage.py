"""The guard against a false pass: a scenario that calls a fixture tool the server does not serve.

Several scenarios are satisfied by an error: ``input-required-result-validate-input`` counts a
-32602 "Unknown tool" as the protocol error it looks for, and a server answering an unknown tool
with an ``isError`` result satisfies ``tools-call-error``. So a scenario whose fixture tools are not
all in ``tools/list`` never counts as a pass, whatever its checks say. The names come from the
pinned suite's scenario sources (``dist/index.js``). The subscription triggers of
``server-stateless`` are listed: the conformance instances run with subscriptions on, so they
advertise ``listChanged`` and the suite calls the triggers (an absent one would only warn).
"""

from __future__ import annotations

from typing import Any

import httpx

_ELICIT = ("test_input_required_result_elicitation",)
SCENARIO_TOOLS: dict[str, tuple[str, ...]] = {
    "tools-call-simple-text": ("test_simple_text",),
    "tools-call-image": ("test_image_content",),
    "tools-call-audio": ("test_audio_content",),
    "tools-call-embedded-resource": ("test_embedded_resource",),
    "tools-call-mixed-content": ("test_multiple_content_types",),
    "tools-call-with-logging": ("test_tool_with_logging",),
    "tools-call-error": ("test_error_handling",),
    "tools-call-with-progress": ("test_tool_with_progress",),
    "tools-call-sampling": ("test_sampling",),
    "tools-call-elicitation": ("test_elicitation",),
    "elicitation-sep1034-defaults": ("test_elicitation_sep1034_defaults",),
    "elicitation-sep1330-enums": ("test_elicitation_sep1330_enums",),
    "server-stateless": (
        "test_missing_capability",
        "test_logging_tool",
        "test_streaming_elicitation",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
    ),
    "server-sse-polling": ("test_reconnection",),
    "json-schema-2020-12": ("json_schema_2020_12_tool",),
    "input-required-result-basic-elicitation": _ELICIT,
    "input-required-result-basic-sampling": ("test_input_required_result_sampling",),
    "input-required-result-basic-list-roots": ("test_input_required_result_list_roots",),
    "input-required-result-request-state": ("test_input_required_result_request_state",),
    "input-required-result-multiple-input-requests": ("test_input_required_result_multiple_inputs",),
    "input-required-result-multi-round": ("test_input_required_result_multi_round",),
    "input-required-result-missing-input-response": _ELICIT,
    "input-required-result-result-type": _ELICIT,
    "input-required-result-ignore-extra-params": _ELICIT,
    "input-required-result-validate-input": _ELICIT,
    "input-required-result-tampered-state": ("test_input_required_result_tampered_state",),
    "input-required-result-capability-check": ("test_input_required_result_capabilities",),
    "tasks-lifecycle": ("greet", "slow_compute", "failing_job", "protocol_error_job"),
    "tasks-capability-negotiation": ("greet", "slow_compute"),
    "tasks-wire-fields": ("slow_compute",),
    "tasks-request-state-removal": ("slow_compute",),
    "tasks-mrtr-input": ("confirm_delete", "multi_input"),
    "tasks-request-headers": ("greet", "slow_compute"),
    "tasks-dispatch-and-envelope": ("greet", "slow_compute", "failing_job", "confirm_delete"),
    "tasks-status-notifications": ("failing_job",),
    "tasks-required-task-error": ("failing_job",),
    "tasks-mrtr-composition": ("test_tool_with_task",),
}
REVISION = "2026-07-28"


def missing_tools(scenario: str, served: set[str]) -> tuple[str, ...]:
    return tuple(name for name in SCENARIO_TOOLS.get(scenario, ()) if name not in served)


def served_tools(url: str, timeout_s: float = 10.0) -> set[str]:
    """Every tool name in ``tools/list`` (all pages), asked as a 2026-07-28 client."""
    names: set[str] = set()
    cursor: str | None = None
    with httpx.Client(timeout=timeout_s) as http:
        for page in range(1000):
            params: dict[str, Any] = {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": REVISION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
            }
            if cursor is not None:
                params["cursor"] = cursor
            response = http.post(
                url,
                json={"jsonrpc": "2.0", "id": page + 1, "method": "tools/list", "params": params},
                headers={
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": REVISION,
                    "Mcp-Method": "tools/list",
                },
            )
            response.raise_for_status()
            if not response.headers.get("content-type", "").startswith("application/json"):
                raise RuntimeError(f"tools/list answered {response.headers.get('content-type')!r}, not JSON")
            result = response.json()["result"]
            names.update(tool["name"] for tool in result["tools"])
            cursor = result.get("nextCursor")
            if not cursor:
                return names
    raise RuntimeError("tools/list kept returning a nextCursor after 1000 pages")
