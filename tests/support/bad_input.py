"""The bad-input corpus: hostile and careless requests as hypothesis strategies, grouped by era,
method and tool, plus the exact requests issue 12 reported (replayed as explicit examples).

A case is a plain dict (era, method, params, id, a header to repeat); :func:`send` puts it on the
wire as such a client would (JSON text with escaped lone surrogates, NaN allowed).
"""

from __future__ import annotations

from typing import Any

import httpx
from hypothesis import strategies as st

from tests.support.endpoint import Instance
from tests.support.hostile import modern_headers, post
from tests.support.mcp_http import CAPS_META, headers

IDEMPOTENCY_KEY = "dev.mcp-platform/idempotencyKey"

HOSTILE: list[Any] = [
    10**38,
    -(10**40),
    10**400,
    2**63,
    1e308,
    5e-324,
    float("nan"),
    float("inf"),
    -0.0,
    "x\ud800",
    "\udfff",
    "",
    "\x00",
    "n" * 4000,
    "x" * 200_000,
    "A" * 32,
    "A" * 3000,
    "../../../etc/passwd",
    "🙂" * 50,
    [],
    {},
    None,
    True,
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
    {"\ud800": 1},
]
text = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)
scalars = st.one_of(
    st.sampled_from(HOSTILE), st.integers(), st.floats(allow_nan=True, allow_infinity=True), text, st.none()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
PLAUSIBLE = {"integer": st.integers(-5, 200), "string": st.text(max_size=20), "boolean": st.booleans()}
LISTS = ["tools/list", "resources/list", "resources/templates/list", "prompts/list", "ping", "server/discover"]
UNKNOWN = ["completion/complete", "resources/subscribe", "tasks/get", "no/such", "", "x" * 300]
DUPLICABLE = ["Origin", "Mcp-Session-Id", "MCP-Protocol-Version", "Authorization", "Mcp-Method", "Mcp-Name"]
Case = dict[str, Any]


def body(request_id: Any, method: str, params: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        found["id"] = request_id
    return found


def case(modern: bool, method: str, params: Any, *, request_id: Any = 7, duplicate: str | None = None) -> Case:
    return {"modern": modern, "method": method, "params": params, "id": request_id, "duplicate": duplicate}


def with_meta(modern: bool) -> st.SearchStrategy[Any]:
    extra = st.fixed_dictionaries(
        {},
        optional={
            "progressToken": values,
            IDEMPOTENCY_KEY: st.one_of(st.text(min_size=1, max_size=8), values),
            "io.modelcontextprotocol/logLevel": st.one_of(st.sampled_from(["debug", "error"]), values),
        },
    )
    base = CAPS_META if modern else {}
    return st.one_of(extra.map(lambda more: {**base, **more}), extra.map(lambda more: {**base, **more}), values)


@st.composite
def envelope(draw: st.DrawFn, modern: bool, method: str, params: st.SearchStrategy[Any]) -> Case:
    """A request around ``params``: a ``_meta`` (usually), an id, now and then a repeated header,
    now and then params that are not an object at all."""
    drawn = draw(params)
    if isinstance(drawn, dict) and draw(st.integers(0, 4)):
        drawn["_meta"] = draw(with_meta(modern))
    if draw(st.integers(0, 9)) == 0:
        drawn = draw(values)
    request_id = None if method.startswith("notifications/") else draw(st.one_of(st.integers(1, 10**6), values))
    duplicate = draw(st.one_of(st.none(), st.none(), st.none(), st.sampled_from(DUPLICABLE)))
    return case(modern, method, drawn, request_id=request_id, duplicate=duplicate)


def arguments_for(schema: dict[str, Any], handles: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Each property plausible, hostile or absent; the handle valid, malformed or unknown; now
    and then a name the tool does not take."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name, prop in schema.get("properties", {}).items():
        plausible = st.sampled_from(handles) if name == "session" else PLAUSIBLE.get(prop.get("type", ""), values)
        fields[name] = st.one_of(plausible, values)
    extra = st.dictionaries(st.sampled_from(["extra", "\ud800", "x" * 300]), values, max_size=1)
    return st.tuples(st.fixed_dictionaries({}, optional=fields), extra).map(lambda both: {**both[1], **both[0]})


def groups(offer: dict[str, Any]) -> list[tuple[str, st.SearchStrategy[Case], list[Case]]]:
    """(name, strategy, the issue's own requests for it), for every era x method x tool."""
    handle, handles = offer["handles"][0], offer["handles"]
    found: list[tuple[str, st.SearchStrategy[Case], list[Case]]] = []
    for modern in (True, False):
        era = "2026" if modern else "2025"
        for tool in offer["tools"]:
            name = tool["name"]
            params = st.fixed_dictionaries(
                {
                    "name": st.one_of(st.just(name), st.just(name), values),
                    "arguments": arguments_for(tool["inputSchema"], handles),
                }
            )
            found.append(
                (f"{era} tools/call {name}", envelope(modern, "tools/call", params), known(modern, name, handle))
            )
        template = (offer["templates"] or [{"uriTemplate": "mcp-platform://none/{x}"}])[0]["uriTemplate"]
        fillers = st.one_of(st.sampled_from(handles), st.text(max_size=40), st.sampled_from(HOSTILE[9:19]))
        uris = fillers.map(lambda filler, t=template: t.split("{", 1)[0] + str(filler) + "/" + t.rsplit("}", 1)[-1])
        found.append(
            (
                f"{era} resources/read",
                envelope(modern, "resources/read", st.fixed_dictionaries({"uri": st.one_of(uris, values)})),
                [],
            )
        )
        prompts = offer["prompts"] or [{"name": "none", "arguments": []}]
        names = [argument["name"] for prompt in prompts for argument in prompt.get("arguments", [])] + ["session"]
        prompt_params = st.fixed_dictionaries(
            {
                "name": st.one_of(st.sampled_from([p["name"] for p in prompts]), values),
                "arguments": st.dictionaries(st.sampled_from(names), st.one_of(st.sampled_from(handles), values)),
            }
        )
        found.append((f"{era} prompts/get", envelope(modern, "prompts/get", prompt_params), []))
        others = st.sampled_from([*LISTS, *UNKNOWN, "logging/setLevel"]).flatmap(
            lambda method, m=modern: envelope(
                m, method, st.fixed_dictionaries({}, optional={"cursor": values, "level": values})
            )
        )
        found.append((f"{era} other methods", others, []))
    found.append(
        ("2025 initialize", envelope(False, "initialize", initialize_params()), known(False, "initialize", handle))
    )
    cancelled = st.fixed_dictionaries({"requestId": values, "reason": values})
    found.append(
        ("2025 cancelled", envelope(False, "notifications/cancelled", cancelled), known(False, "cancel", handle))
    )
    return found


def initialize_params() -> st.SearchStrategy[dict[str, Any]]:
    client_info = st.one_of(st.fixed_dictionaries({"name": values, "version": values}), values)
    version = st.one_of(st.sampled_from(["2025-11-25", "2025-03-26", "1999-01-01"]), values)
    return st.fixed_dictionaries(
        {"protocolVersion": version, "capabilities": st.one_of(st.just({}), values), "clientInfo": client_info}
    )


def known(modern: bool, name: str, handle: str) -> list[Case]:
    """The requests issue 12 reported, replayed in every run."""

    def call(arguments: dict[str, Any], **meta: Any) -> Case:
        params = {"name": name, "arguments": arguments, "_meta": {**(CAPS_META if modern else {}), **meta}}
        return case(modern, "tools/call", params)

    reported: dict[str, list[Case]] = {
        "read_notes": [call({"session": handle, "limit": 10**38}), call({"session": handle, "limit": 10**400})],
        "session_audit": [
            call({"session": handle, "limit": -(10**40)}),
            call({"session": handle, "cursor": "A" * 5000}),
        ],
        "recent_tool_events": [call({"session": handle, "minutes": 10**40})],
        "append_note": [
            call({"session": handle, "text": "x" * 500_000}),
            call({"session": handle, "text": "x" * 300_000}),
            call({"session": handle, "text": "bad \ud800"}),
            call({"session": handle, "text": "k"}, **{IDEMPOTENCY_KEY: "k\ud800"}),
            call({"session": "x" * 10_000, "text": "t"}),
        ],
        "open_session": [call({"title": "t\ud800"})],
        "countdown": [call({"steps": 100, "interval_ms": 10_000})],
        "echo": [
            case(modern, "tools/call", {"name": "echo", "arguments": {"text": "o"}}, duplicate=d) for d in DUPLICABLE
        ],
        "initialize": [
            case(
                False,
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x\ud800"}},
            )
        ],
        "cancel": [case(False, "notifications/cancelled", {"requestId": rid}, request_id=None) for rid in ({}, [1])],
    }
    return reported.get(name, [])


def send(instance: Instance, key: str, item: Case, transport_session: str) -> httpx.Response:
    method, params = item["method"], item["params"]
    if item["modern"]:
        header_list = modern_headers(key, method, params)
    else:
        header_list = [*headers(key).items(), ("MCP-Protocol-Version", "2025-11-25")]
        if method != "initialize":
            header_list.append(("Mcp-Session-Id", transport_session))
    duplicate = item["duplicate"]
    if duplicate is not None:
        copies = [value for name, value in header_list if name.lower() == duplicate.lower()]
        header_list.append((duplicate, copies[0] if copies else "http://evil.example"))
    return post(instance.url, header_list, body(item["id"], method, params))


# -- issue 26: odd values in every client-supplied field that is stored --------------------------------
# What the server keeps of a client's: a task's progress token, capabilities and answers (ask_first,
# tasks/update), a 2025 client response (a reply item), a 2025 subscription's URI, and what
# initialize keeps (above). Plus completion/complete, whose context a completer reads. A case's
# ``kind`` says how it travels: "plain" (:func:`send`), "ask_first" (a round, then its retry with
# the answer), "update" (tasks/update of a task waiting for input), "reply" (the answer to a 2025
# server request on a live call's stream).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_CAPS = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}
TASK_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": TASK_CAPS,
}
ACTIONS = st.sampled_from(["accept", "decline", "cancel"])
answers = st.one_of(
    st.fixed_dictionaries(
        {"action": st.one_of(ACTIONS, values)}, optional={"content": st.dictionaries(text, values, max_size=3) | values}
    ),
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]) | values, "model": values, "content": values}
    ),
    values,
)
capabilities = st.fixed_dictionaries(
    {"extensions": st.fixed_dictionaries({TASKS_EXTENSION: values}, optional={"x": values})},
    optional={"elicitation": values, "roots": values, "\ud800": values, "pad": st.just("p" * 5000)},
)


def accepting(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def stored_case(kind: str, modern: bool, method: str, params: Any, request_id: Any = 7) -> Case:
    return {**case(modern, method, params, request_id=request_id), "kind": kind}


def stored_groups(handle: str) -> list[tuple[str, st.SearchStrategy[Case], list[Case]]]:
    """(name, strategy, the issue's own requests for it) for every stored client field."""
    report = {"name": "session_report", "arguments": {"session": handle}}
    token = st.one_of(st.sampled_from(HOSTILE), values, st.just("t" * 700_000))
    progress = token.map(
        lambda t: stored_case("plain", True, "tools/call", {**report, "_meta": {**TASK_META, "progressToken": t}})
    )
    declared = capabilities.map(
        lambda caps: stored_case(
            "plain",
            True,
            "tools/call",
            {**report, "_meta": {**TASK_META, "io.modelcontextprotocol/clientCapabilities": caps}},
        )
    )
    ask_first = answers.map(lambda answer: stored_case("ask_first", True, "tools/call", {"user_name": answer}))
    responses = st.dictionaries(st.sampled_from(["name", "confirm", "other", "\ud800"]), answers, max_size=2)
    update = st.one_of(responses, values).map(lambda found: stored_case("update", True, "tasks/update", found))
    reply = st.one_of(
        st.fixed_dictionaries({"result": answers}),
        st.fixed_dictionaries({"error": values}),
        st.fixed_dictionaries({"result": answers, "error": values}),
    ).map(lambda body: stored_case("reply", False, "", body))
    uris = st.one_of(st.sampled_from(HOSTILE[9:19]), st.text(max_size=40).map(lambda t: "test://" + t), values)
    subscribe = envelope(False, "resources/subscribe", st.fixed_dictionaries({"uri": uris}))
    completion_params = st.fixed_dictionaries(
        {
            "ref": st.one_of(st.just({"type": "ref/prompt", "name": "summarize_session"}), values),
            "argument": st.one_of(
                st.fixed_dictionaries({"name": st.just("style") | values, "value": text | values}), values
            ),
        },
        optional={"context": st.one_of(st.fixed_dictionaries({"arguments": values}), values)},
    )
    nan = float("nan")
    caps_key = "io.modelcontextprotocol/clientCapabilities"
    with_caps = {**report, "_meta": {**TASK_META, caps_key: {"extensions": {TASKS_EXTENSION: {"x": nan}}}}}
    completing = {
        "ref": {"type": "ref/prompt", "name": "summarize_session"},
        "argument": {"name": "style", "value": "b"},
    }
    reported = {
        "progress": [
            stored_case("plain", True, "tools/call", {**report, "_meta": {**TASK_META, "progressToken": t}})
            for t in (nan, float("inf"), 10**200, 1e-200, "x\ud800", "t" * 700_000)
        ],
        "capabilities": [stored_case("plain", True, "tools/call", with_caps)],
        "ask_first": [stored_case("ask_first", True, "tools/call", {"user_name": accepting(name=nan)})],
        "update": [stored_case("update", True, "tasks/update", {"name": accepting(name=10**200)})],
        "reply": [stored_case("reply", False, "", {"result": accepting(name="x\ud800")})],
        "completion": [
            case(modern, "completion/complete", {**completing, "context": {"arguments": odd}})
            for modern in (True, False)
            for odd in (5, "ab", [1, 2])
        ],
    }
    return [
        ("2026 task progressToken", progress, reported["progress"]),
        ("2026 task clientCapabilities", declared, reported["capabilities"]),
        ("2026 ask_first answers", ask_first, reported["ask_first"]),
        ("2026 tasks/update answers", update, reported["update"]),
        ("2025 client responses", reply, reported["reply"]),
        ("2025 resources/subscribe", subscribe, []),
        (
            "2026 completion/complete",
            envelope(True, "completion/complete", completion_params),
            reported["completion"][:3],
        ),
        (
            "2025 completion/complete",
            envelope(False, "completion/complete", completion_params),
            reported["completion"][3:],
        ),
    ]
