#!/usr/bin/env node
// An MCP Apps host for one view, in headless Chromium (playwright-core, the system's Chromium): the
// official host bridge (`AppBridge` of @modelcontextprotocol/ext-apps, from node_modules) renders
// the view in a sandboxed iframe, answers its `ui/initialize`, sends it a tool's input and result
// once it is initialized, and answers the `tools/call` requests it makes with the given answers, in
// order. Then it runs the steps, and tears the view down. It prints `RESULT <json>`:
//
//   { calls, sizes, teardown }
//
// calls: the params of each `tools/call` the view made; sizes: each `ui/notifications/size-changed`;
// teardown: whether the view acknowledged `ui/resource-teardown`.
//
//   node local/clients/app_view_host.mjs --view view.html --chromium /usr/bin/chromium \
//     --input '{"name":"hits"}' --result '<CallToolResult>' --answers '[<CallToolResult>, ...]' \
//     --steps '[{"wait":["#value","3"]},{"click":"#add"},{"wait":["#value","4"]}]'
//
// A step waits until an element of the view shows a text, or clicks one. The page and the bridge's
// modules are served from a loopback port of its own; the browser may reach nothing else. Exit 1 on
// any failure (a view that never initializes, a step that times out), 2 on bad usage.

import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { chromium } from 'playwright-core';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BROWSER_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'];
const STEP_TIMEOUT_MS = 10_000;

// The bridge's own imports, resolved by the browser from node_modules.
const IMPORT_MAP = {
  imports: {
    '@modelcontextprotocol/sdk/': '/node_modules/@modelcontextprotocol/sdk/dist/esm/',
    'zod/v4': '/node_modules/zod/v4/index.js',
    'zod/v3': '/node_modules/zod/v3/index.js',
    'zod/v4-mini': '/node_modules/zod/v4-mini/index.js',
    'zod-to-json-schema': '/node_modules/zod-to-json-schema/dist/esm/index.js',
  },
};

const HOST_PAGE = `<!doctype html>
<script type="importmap">${JSON.stringify(IMPORT_MAP)}</script>
<iframe id="view" sandbox="allow-scripts" style="width:480px;height:240px;border:0"></iframe>
<script type="module">
import { AppBridge, PostMessageTransport } from "/node_modules/@modelcontextprotocol/ext-apps/dist/src/app-bridge.js";
const fixture = await (await fetch("/fixture.json")).json();
const iframe = document.getElementById("view");
const bridge = new AppBridge(null, { name: "test-host", version: "1" }, { serverTools: {} });
window.host = { calls: [], sizes: [], ready: false, bridge };
bridge.oncalltool = async (params) => {
  window.host.calls.push(params);
  const answer = fixture.answers.shift();
  if (!answer) throw new Error("no answer left for " + params.name);
  return answer;
};
bridge.onsizechange = (size) => window.host.sizes.push(size);
bridge.oninitialized = async () => {
  await bridge.sendToolInput({ arguments: fixture.input });
  await bridge.sendToolResult(fixture.result);
  window.host.ready = true;
};
// Listening before the view runs: it asks ui/initialize as its script starts, before its load event.
await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
iframe.srcdoc = await (await fetch("/view.html")).text();
</script>`;

function usage(message) {
  console.error(`app_view_host: ${message}`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    view: { type: 'string' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    input: { type: 'string', default: '{}' },
    result: { type: 'string' },
    answers: { type: 'string', default: '[]' },
    steps: { type: 'string', default: '[]' },
  },
});
if (!values.view || !values.result) usage('--view and --result are required');
const fixture = { input: JSON.parse(values.input), result: JSON.parse(values.result), answers: JSON.parse(values.answers) };
const steps = JSON.parse(values.steps);
const view = await readFile(values.view, 'utf8');

const server = createServer(async (request, response) => {
  const path = new URL(request.url, 'http://host').pathname;
  const types = { '.js': 'text/javascript', '.json': 'application/json', '.html': 'text/html' };
  const send = (status, body, type = 'text/plain') => {
    response.writeHead(status, { 'content-type': type });
    response.end(body);
  };
  if (path === '/') return send(200, HOST_PAGE, 'text/html');
  if (path === '/view.html') return send(200, view, 'text/html');
  if (path === '/fixture.json') return send(200, JSON.stringify(fixture), 'application/json');
  const file = normalize(join(ROOT, path));
  if (!path.startsWith('/node_modules/') || !file.startsWith(join(ROOT, 'node_modules'))) return send(404, 'not found');
  try {
    send(200, await readFile(file), types[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream');
  } catch {
    send(404, 'not found');
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({ executablePath: values.chromium, args: BROWSER_FLAGS });
let failed = null;
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
  page.on('requestfailed', (request) => errors.push(`${request.url()}: ${request.failure()?.errorText}`));
  await page.route('**/*', (route) => (route.request().url().startsWith(origin) ? route.continue() : route.abort()));
  await page.goto(origin + '/');
  await page.waitForFunction(() => window.host?.ready, null, { timeout: STEP_TIMEOUT_MS }).catch(() => {
    throw new Error(`the view never initialized (page errors: ${JSON.stringify(errors)})`);
  });
  const frame = page.frameLocator('#view');
  for (const step of steps) {
    if (step.click) await frame.locator(step.click).click({ timeout: STEP_TIMEOUT_MS });
    if (step.wait) {
      const [selector, text] = step.wait;
      await frame.locator(selector).filter({ hasText: text }).waitFor({ timeout: STEP_TIMEOUT_MS }).catch(async () => {
        const shown = await frame.locator(selector).textContent().catch(() => null);
        throw new Error(`${selector} never showed ${JSON.stringify(text)} (it shows ${JSON.stringify(shown)})`);
      });
    }
  }
  const teardown = await page.evaluate(() => window.host.bridge.teardownResource({}).then(() => true));
  const report = await page.evaluate(() => ({ calls: window.host.calls, sizes: window.host.sizes }));
  console.log('RESULT ' + JSON.stringify({ ...report, teardown }));
} catch (error) {
  failed = error;
} finally {
  await browser.close();
  server.close();
}
if (failed) {
  console.error(`app_view_host: ${failed.message}`);
  process.exit(1);
}
