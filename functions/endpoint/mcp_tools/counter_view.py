"""ui://counter/view.html: the MCP Apps view of increment_counter (``@tool(ui=VIEW_URI)``).

A host that renders MCP Apps shows this page in a sandboxed iframe beside each increment_counter
result: the counter's name and value, and a "+1" button that calls the tool again through the
host. One self-contained document: inline script and style, nothing loaded from elsewhere, so the
host's default Content-Security-Policy is all it needs (no ``csp=``). It speaks the extension's
JSON-RPC over ``postMessage`` by hand, to show how little is needed; a larger view would use the
``@modelcontextprotocol/ext-apps`` browser SDK, bundled into the page.
"""

from __future__ import annotations

from mcp_platform import ui_resource

VIEW_URI = "ui://counter/view.html"

COUNTER_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Counter</title>
<style>
  body { margin: 0; padding: 12px; font: 14px system-ui, sans-serif;
         color: var(--color-text-primary, #171717); background: var(--color-background-primary, transparent); }
  #value { font-size: 2em; font-weight: 600; margin-right: 12px; }
  button { font: inherit; padding: 4px 14px; }
  #status { color: var(--color-text-danger, #b42318); }
</style>
</head>
<body>
<div id="name">counter</div>
<output id="value">-</output>
<button id="add" type="button" disabled>+1</button>
<div id="status" role="status"></div>
<script>
// MCP Apps (SEP-1865): JSON-RPC 2.0 with the host over postMessage.
let nextId = 1;
const pending = new Map();
let toolArguments = null; // the call's arguments: its counter name, and its session handle if any
const $ = (id) => document.getElementById(id);

function send(message) { window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*"); }
function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function show(result) {
  if (result.isError) {
    $("status").textContent = (result.content || []).map((block) => block.text).join(" ");
  } else if (result.structuredContent) {
    $("status").textContent = "";
    $("name").textContent = result.structuredContent.name;
    $("value").textContent = result.structuredContent.value;
  }
  // The page's own height (the host sizes a flexible frame to it), not the frame's.
  const height = Math.ceil(document.body.getBoundingClientRect().height);
  send({ method: "ui/notifications/size-changed", params: { height } });
}

window.addEventListener("message", (event) => {
  const message = event.data;
  if (event.source !== window.parent || !message || message.jsonrpc !== "2.0") return;
  if (message.method === undefined) { // a response to one of our requests
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (waiting) message.error ? waiting.reject(new Error(message.error.message)) : waiting.resolve(message.result);
  } else if (message.id !== undefined) { // the host's request (ui/resource-teardown, ping): acknowledged
    send({ id: message.id, result: {} });
  } else if (message.method === "ui/notifications/tool-input") {
    toolArguments = message.params.arguments || {};
    $("add").disabled = false;
  } else if (message.method === "ui/notifications/tool-result") {
    show(message.params);
  }
});

$("add").addEventListener("click", async () => {
  try {
    show(await request("tools/call", { name: "increment_counter", arguments: { ...toolArguments, by: 1 } }));
  } catch (error) {
    $("status").textContent = error.message;
  }
});

request("ui/initialize", {
  protocolVersion: "2026-01-26",
  appInfo: { name: "counter-view", version: "1.0.0" },
  appCapabilities: {},
}).then(() => send({ method: "ui/notifications/initialized", params: {} }));
</script>
</body>
</html>
"""


@ui_resource(VIEW_URI, title="Counter", prefers_border=True)
def counter_view() -> str:
    """A session counter's name and value, and a button that adds one (increment_counter's view)."""
    return COUNTER_HTML
