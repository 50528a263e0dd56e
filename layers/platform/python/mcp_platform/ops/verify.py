"""Proving a deployment works, from the outside in: ``python -m mcp_platform.ops verify``.

    python -m mcp_platform.ops --stack McpPlatform-prod verify --url <McpEndpointUrl output> --key <API key>
    python -m local.ops verify --url http://127.0.0.1:8000/mcp --key <API key>      # against make dev

Each check is one line of the report and passes, fails or is skipped with its reason; the exit
code is 1 when any check failed. In order:

- ``health``: ``GET /healthz`` answers 200 (the Web Adapter's readiness path).
- ``unauthenticated``: a request without credentials is refused with 401 and ``WWW-Authenticate``.
- ``2025``: ``initialize`` (an ``Mcp-Session-Id``), ``notifications/initialized``, ``tools/list``
  and a call of the session tool on the transport session's application session.
- ``2026``: ``server/discover``, ``tools/list``, a session opened with the opener tool and a call of
  the session tool on its handle, each request carrying the ``_meta`` envelope.
- ``streaming``: a call of the streaming tool with a progress token answers as an SSE stream
  carrying progress notifications, then its result.
- ``ingest``: the session-tool calls' events reach ingest (its dedupe marker ``event#<call id>``
  exists) within ``--ingest-within`` seconds: endpoint, stream and ingest work end to end.
- ``dlq``: every dead-letter queue of the operations environment is empty.
- ``alarms``: no alarm of the stack (``--stack``) is in ALARM; without ``--stack`` there is no
  alarm to read (the local emulator has none), and the line says so.

The calls it makes are ordinary calls under the key's principal: a session with one note per era
(the 2025 one is ended afterwards, the 2026 one expires with the session TTL) and their usage.
Use a key minted for verification, so a principal's usage and quotas stay its own.

Only the standard library speaks HTTP here: the layer carries no HTTP client, and this command
must run wherever the ``mcp_platform`` package does (the repository's venv, the layer's Python).
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from mcp_platform.protocol.versions import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LATEST_HANDSHAKE_VERSION,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
)

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

PASS, FAIL, SKIP = "pass", "fail", "skip"
DEFAULT_INGEST_WITHIN_S = 60.0
DEFAULT_TIMEOUT_S = 30.0
INGEST_POLL_S = 0.5
CLIENT_INFO = {"name": "mcp-platform-verify", "version": "1"}
ACCEPT = "application/json, text/event-stream"
MODERN = MODERN_VERSIONS[0]
ALARM_NAMES_PER_CALL = 100  # DescribeAlarms accepts at most 100 names


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    status: str  # PASS, FAIL or SKIP
    detail: str
    seconds: float = 0.0

    def line(self) -> str:
        return f"{self.status.upper():4}  {self.name:15} {self.detail} ({self.seconds:.1f} s)"


@dataclass(frozen=True)
class Report:
    url: str
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        return all(check.status != FAIL for check in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "passed": self.passed,
            "checks": [
                {"name": c.name, "status": c.status, "detail": c.detail, "seconds": round(c.seconds, 3)}
                for c in self.checks
            ],
        }


@dataclass(frozen=True)
class Tools:
    """The tools the era checks call: the starter app's by default (functions/endpoint/mcp_tools);
    a deployment serving other tools names its own, or the checks that need one are skipped."""

    opener: str = "open_session"  # returns {"session": <handle>}
    session: str = "append_note"  # a session tool that commits (takes "session" and "text")
    streaming: str = "countdown"  # reports progress (takes "steps" and "interval_ms")


@dataclass(frozen=True)
class VerifyOptions:
    url: str
    key: str
    tools: Tools = field(default_factory=Tools)
    ingest_within_s: float = DEFAULT_INGEST_WITHIN_S
    timeout_s: float = DEFAULT_TIMEOUT_S
    stack: str | None = None  # set: the stack's alarms are read


class CheckFailed(Exception):
    """A check's expectation did not hold; the message is the report's detail."""


class Skipped(Exception):
    """A check could not run here; the message says why."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages of a JSON body or of each SSE event's data."""
        content_type = self.headers.get("content-type", "")
        if content_type.startswith("text/event-stream"):
            found = []
            for block in self.body.decode("utf-8").split("\n\n"):
                data = "\n".join(line[5:].lstrip() for line in block.splitlines() if line.startswith("data:"))
                if data:
                    found.append(json.loads(data))
            return found
        if content_type.startswith("application/json") and self.body:
            return [json.loads(self.body)]
        return []

    def result(self, request_id: int) -> dict[str, Any]:
        """The request's result, or CheckFailed naming the status or the error."""
        if self.status != 200:
            raise CheckFailed(f"HTTP {self.status}: {self.body[:300].decode('utf-8', 'replace')}")
        for message in self.messages():
            if message.get("id") == request_id:
                if "error" in message:
                    raise CheckFailed(f"error {json.dumps(message['error'])[:300]}")
                result: dict[str, Any] = message["result"]
                return result
        raise CheckFailed(f"no response to request {request_id} in {self.body[:300].decode('utf-8', 'replace')}")


class McpHttp:
    """POSTs JSON-RPC messages to one MCP endpoint (urllib: the standard library only)."""

    def __init__(self, url: str, key: str | None, timeout_s: float) -> None:
        self.url, self._key, self._timeout_s = url, key, timeout_s
        self._ids = iter(range(1, 1_000_000))

    def next_id(self) -> int:
        return next(self._ids)

    def send(self, method: str, body: dict[str, Any] | None, headers: Mapping[str, str] | None = None) -> Reply:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url, data=data, method=method)  # noqa: S310 - the operator's URL
        request.add_header("Accept", ACCEPT)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._key is not None:
            request.add_header("Authorization", f"Bearer {self._key}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        return fetch(request, self._timeout_s)

    def legacy(self, method: str, params: dict[str, Any], session_id: str | None) -> tuple[int, Reply]:
        request_id = self.next_id()
        headers = {"MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION}
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return request_id, self.send("POST", body, headers)

    def modern(self, method: str, params: dict[str, Any], meta: Mapping[str, Any] | None = None) -> tuple[int, Reply]:
        """A 2026-07-28 request: the ``_meta`` envelope and its mirror headers."""
        request_id = self.next_id()
        envelope = {
            PROTOCOL_VERSION_META_KEY: MODERN,
            CLIENT_CAPABILITIES_META_KEY: {},
            CLIENT_INFO_META_KEY: CLIENT_INFO,
            **(meta or {}),
        }
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": envelope}}
        return request_id, self.send("POST", body, headers)


def fetch(request: urllib.request.Request, timeout_s: float) -> Reply:
    """The whole response, error statuses included (they are what some checks expect)."""
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - the operator's URL
            return Reply(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
    except urllib.error.HTTPError as error:
        return Reply(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())


def tool_names(result: dict[str, Any]) -> set[str]:
    return {tool["name"] for tool in result.get("tools", [])}


def tool_output(result: dict[str, Any]) -> Any:
    """A tool result's structured content, else its first text block parsed as JSON (or the text)."""
    if result.get("isError"):
        raise CheckFailed(f"the tool answered isError: {json.dumps(result.get('content'))[:300]}")
    if "structuredContent" in result:
        return result["structuredContent"]
    for block in result.get("content", []):
        if block.get("type") == "text":
            try:
                return json.loads(block["text"])
            except ValueError:
                return block["text"]
    return None


@dataclass
class Findings:
    """What the era checks leave for the later ones: the sessions whose calls ingest must see."""

    sessions: list[str] = field(default_factory=list)
    served: set[str] | None = None  # the tools the 2026 tools/list named
    legacy_session: str | None = None  # ended once the ingest check is done


class ClientFactory(Protocol):
    """``client(service)``: an AWS client of the operations environment, for the services the
    checks read."""

    @overload
    def __call__(self, service: Literal["cloudformation"]) -> CloudFormationClient: ...
    @overload
    def __call__(self, service: Literal["cloudwatch"]) -> CloudWatchClient: ...
    @overload
    def __call__(self, service: Literal["dynamodb"]) -> DynamoDBClient: ...
    @overload
    def __call__(self, service: Literal["sqs"]) -> SQSClient: ...


class Verifier:
    def __init__(
        self,
        options: VerifyOptions,
        env: Mapping[str, str],
        client: ClientFactory,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``env``: the operations environment (table names, queue URLs); ``client(service)``: an
        AWS client for it."""
        self._options = options
        self._env = env
        self._client = client
        self._clock = clock
        self._http = McpHttp(options.url, options.key, options.timeout_s)
        self._found = Findings()

    def run(self) -> Report:
        checks = [
            self._check("health", self._health),
            self._check("unauthenticated", self._unauthenticated),
            self._check("2025", self._legacy_era),
            self._check("2026", self._modern_era),
            self._check("streaming", self._streaming),
            self._check("ingest", self._ingest),
            self._check("dlq", self._dead_letters),
            self._check("alarms", self._alarms),
        ]
        self._end_legacy_session()
        return Report(self._options.url, tuple(checks))

    def _check(self, name: str, body: Callable[[], str]) -> Check:
        started = self._clock()
        try:
            status, detail = PASS, body()
        except Skipped as skipped:
            status, detail = SKIP, str(skipped)
        except CheckFailed as failed:
            status, detail = FAIL, str(failed)
        except Exception as error:  # unreachable, a malformed answer, an AWS error: this check's failure
            status, detail = FAIL, f"{type(error).__name__}: {error}"
        return Check(name, status, detail, self._clock() - started)

    # -- the endpoint -------------------------------------------------------------------------

    def _health(self) -> str:
        parts = urllib.parse.urlsplit(self._options.url)
        health = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/healthz", "", ""))
        reply = fetch(urllib.request.Request(health), self._options.timeout_s)  # noqa: S310 - the operator's URL
        if reply.status != 200:
            raise CheckFailed(f"GET /healthz answered {reply.status}")
        return "GET /healthz 200"

    def _unauthenticated(self) -> str:
        anonymous = McpHttp(self._options.url, None, self._options.timeout_s)
        _, reply = anonymous.legacy("initialize", _initialize_params(), None)
        if reply.status != 401:
            raise CheckFailed(f"initialize without credentials answered {reply.status}, not 401")
        if "www-authenticate" not in reply.headers:
            raise CheckFailed("401 without WWW-Authenticate")
        return "initialize without credentials: 401 with WWW-Authenticate"

    def _legacy_era(self) -> str:
        http, tools = self._http, self._options.tools
        request_id, reply = http.legacy("initialize", _initialize_params(), None)
        result = reply.result(request_id)
        session_id = reply.headers.get("mcp-session-id")
        if not session_id:
            raise CheckFailed("initialize answered without an Mcp-Session-Id")
        self._found.legacy_session = session_id
        notified = http.send(
            "POST",
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"MCP-Protocol-Version": result["protocolVersion"], "Mcp-Session-Id": session_id},
        )
        if notified.status != 202:
            raise CheckFailed(f"notifications/initialized answered {notified.status}, not 202")
        request_id, reply = http.legacy("tools/list", {}, session_id)
        served = tool_names(reply.result(request_id))
        if tools.session not in served:
            raise Skipped(f"initialize and tools/list work ({len(served)} tools); {tools.session} is not served")
        request_id, reply = http.legacy(
            "tools/call", {"name": tools.session, "arguments": {"text": _note("2025")}}, session_id
        )
        tool_output(reply.result(request_id))
        self._found.sessions.append(session_id)
        return f"{result['protocolVersion']}: initialize, initialized, tools/list ({len(served)}), {tools.session}"

    def _modern_era(self) -> str:
        http, tools = self._http, self._options.tools
        request_id, reply = http.modern("server/discover", {})
        discovered = reply.result(request_id)
        if MODERN not in discovered.get("supportedVersions", [MODERN]):
            raise CheckFailed(f"server/discover does not list {MODERN}: {json.dumps(discovered)[:300]}")
        request_id, reply = http.modern("tools/list", {})
        served = tool_names(reply.result(request_id))
        self._found.served = served
        missing = [name for name in (tools.opener, tools.session) if name not in served]
        if missing:
            raise Skipped(f"server/discover and tools/list work ({len(served)} tools); not served: {missing}")
        request_id, reply = http.modern("tools/call", {"name": tools.opener, "arguments": {"title": "verify"}})
        opened = tool_output(reply.result(request_id))
        handle = opened.get("session") if isinstance(opened, dict) else None
        if not isinstance(handle, str):
            raise CheckFailed(f"{tools.opener} returned no session handle: {opened!r}")
        arguments = {"session": handle, "text": _note(MODERN)}
        request_id, reply = http.modern("tools/call", {"name": tools.session, "arguments": arguments})
        tool_output(reply.result(request_id))
        self._found.sessions.append(handle)
        return f"{MODERN}: server/discover, tools/list ({len(served)}), {tools.opener}, {tools.session}"

    def _streaming(self) -> str:
        tool = self._options.tools.streaming
        if self._found.served is None:
            raise Skipped("the 2026 tools/list did not answer (see the 2026 check)")
        if tool not in self._found.served:
            raise Skipped(f"{tool} is not served (name a streaming tool with --streaming-tool)")
        token = f"verify-{int(time.time() * 1000)}"
        arguments = {"steps": 3, "interval_ms": 100}
        request_id, reply = self._http.modern(
            "tools/call", {"name": tool, "arguments": arguments}, meta={"progressToken": token}
        )
        if not reply.headers.get("content-type", "").startswith("text/event-stream"):
            raise CheckFailed(f"answered {reply.headers.get('content-type')!r}, not an SSE stream")
        progress = [
            m
            for m in reply.messages()
            if m.get("method") == "notifications/progress" and m.get("params", {}).get("progressToken") == token
        ]
        tool_output(reply.result(request_id))
        if not progress:
            raise CheckFailed(f"{tool} streamed its result without a progress notification")
        return f"{tool}: {len(progress)} progress notifications, then the result, on one SSE stream"

    def _end_legacy_session(self) -> None:
        """Ends the 2025 transport session (its application session with it); best effort."""
        if self._found.legacy_session is None:
            return
        headers = {"MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION, "Mcp-Session-Id": self._found.legacy_session}
        with contextlib.suppress(OSError):  # the session expires with its TTL all the same
            self._http.send("DELETE", None, headers)

    # -- the pipeline and the operations environment --------------------------------------------

    def _ingest(self) -> str:
        from mcp_platform.adapters.dynamodb import table_schema as ts
        from mcp_platform.config import EnvVars

        table = self._env.get(EnvVars.SESSION_TABLE)
        if not table:
            raise Skipped(f"no {EnvVars.SESSION_TABLE} in the operations environment (--stack, or make dev)")
        if not self._found.sessions:
            raise Skipped("no session-tool call was made (see the era checks)")
        dynamodb = self._client("dynamodb")
        calls = [call for session in self._found.sessions for call in _committed_calls(dynamodb, table, session)]
        if len(calls) < len(self._found.sessions):
            raise CheckFailed(f"{len(calls)} committed call(s) found for {len(self._found.sessions)} session(s)")
        deadline = self._clock() + self._options.ingest_within_s
        waiting = set(calls)
        while True:
            for call in sorted(waiting):
                key = {ts.PK: {"S": ts.event_dedupe_pk(call)}, ts.SK: {"S": ts.EVENT_DEDUPE_SK}}
                if "Item" in dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True):
                    waiting.discard(call)
            if not waiting:
                return (
                    f"{len(calls)} call event(s) reached ingest ({ts.EVENT_DEDUPE_PREFIX}<call id> markers) "
                    f"within the {self._options.ingest_within_s:g} s bound"
                )
            if self._clock() >= deadline:
                raise CheckFailed(
                    f"{len(waiting)} of {len(calls)} call event(s) not ingested within "
                    f"{self._options.ingest_within_s:g} s (no {ts.EVENT_DEDUPE_PREFIX}<call id> marker): "
                    "is ingest running, and its mapping enabled?"
                )
            time.sleep(INGEST_POLL_S)

    def _dead_letters(self) -> str:
        from mcp_platform.ops.dead_letters import queue_urls

        urls = {kind: url for kind, url in queue_urls(self._env).items() if url}
        if not urls:
            raise Skipped("no dead-letter queue in the operations environment (--stack, or make dev)")
        sqs = self._client("sqs")
        depths = {}
        for kind, url in urls.items():
            attributes = sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
            )["Attributes"]
            depths[kind] = sum(int(value) for value in attributes.values())
        waiting = {kind: depth for kind, depth in depths.items() if depth}
        if waiting:
            shown = ", ".join(f"{kind} {depth}" for kind, depth in waiting.items())
            raise CheckFailed(f"messages waiting: {shown} (python -m mcp_platform.ops dlq show <kind>)")
        return f"{len(depths)} empty: {', '.join(depths)}"

    def _alarms(self) -> str:
        if self._options.stack is None:
            raise Skipped("not checked: no --stack to read alarms from (the local emulator has no CloudWatch alarms)")
        names = list(_stack_alarm_names(self._client("cloudformation"), self._options.stack))
        if not names:
            raise Skipped(f"not checked: stack {self._options.stack} has no alarms")
        states: dict[str, list[str]] = {}
        cloudwatch = self._client("cloudwatch")
        for chunk in _chunks(names, ALARM_NAMES_PER_CALL):
            for alarm in cloudwatch.describe_alarms(AlarmNames=chunk)["MetricAlarms"]:
                states.setdefault(alarm["StateValue"], []).append(alarm["AlarmName"])
        firing = states.get("ALARM", [])
        if firing:
            raise CheckFailed(f"{len(firing)} of {len(names)} in ALARM: {', '.join(sorted(firing))}")
        pending = states.get("INSUFFICIENT_DATA", [])
        # A new alarm has no data until its first evaluation: not a failure, but not OK yet either.
        return f"{len(states.get('OK', []))} of {len(names)} OK" + (
            f", {len(pending)} not evaluated yet (INSUFFICIENT_DATA)" if pending else ""
        )


def _initialize_params() -> dict[str, Any]:
    return {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}


def _note(era: str) -> str:
    return f"mcp-platform verify ({era}) at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"


def _committed_calls(dynamodb: DynamoDBClient, table: str, session_id: str) -> list[str]:
    """The ids of the calls committed in the session: each record that carries its committed
    event (a record ingest wrote for an uncommitted call carries none)."""
    from mcp_platform.adapters.dynamodb import table_schema as ts

    items = dynamodb.query(
        TableName=table,
        KeyConditionExpression="#pk = :pk AND begins_with(#sk, :record)",
        FilterExpression="attribute_exists(#event)",
        ProjectionExpression="#id",
        ExpressionAttributeNames={"#pk": ts.PK, "#sk": ts.SK, "#event": ts.COMMITTED_EVENT, "#id": ts.TOOL_CALL_ID},
        ExpressionAttributeValues={
            ":pk": {"S": ts.session_pk(session_id)},
            ":record": {"S": ts.TOOL_RECORD_PREFIX},
        },
        ConsistentRead=True,
    )["Items"]
    return [item[ts.TOOL_CALL_ID]["S"] for item in items]


def _stack_alarm_names(cloudformation: CloudFormationClient, stack: str) -> Iterator[str]:
    """The stack's CloudWatch alarms (their physical ids are their names)."""
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for resource in page["StackResourceSummaries"]:
            if resource["ResourceType"] == "AWS::CloudWatch::Alarm" and resource.get("PhysicalResourceId"):
                yield resource["PhysicalResourceId"]


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
