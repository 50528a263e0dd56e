#!/usr/bin/env node
// A person at the MCP Inspector's web UI, played by a headless Chromium (playwright-core, the
// system's Chromium: playwright's own browser download is not used). With no client registered
// anywhere it connects to an MCP server over Streamable HTTP; the Inspector registers itself and
// sends the browser to the authorization server, where this script approves the consent page
// (`Allow`) and signs in on the upstream login page (`Sign in`). Back in the Inspector it lists
// the tools, calls `echo` with `--text` and prints `RESULT <json>`:
//
//   { clientId, consent, navigations, history, result, blocked }
//
// clientId: the `client_id` the Inspector sent to /authorize; consent: the consent page's
// heading; navigations: every URL the tab loaded, redirects included, without query; history:
// the Inspector's request history; result: the text of the Inspector's "Tool Result" panel;
// blocked: the requests refused for leaving loopback (the browser may reach nothing else).
//
//   node local/clients/inspector_oauth.mjs --inspector 'http://127.0.0.1:6274/?MCP_PROXY_AUTH_TOKEN=T' \
//     --url http://127.0.0.1:8000/mcp --chromium /usr/bin/chromium --screenshots build/inspector
//
// With --screenshots it saves one PNG per step there (and the page it failed on). Exit 1 on any
// failure, 2 on bad usage; every wait is bounded and the whole run by --timeout-ms.

import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { chromium } from 'playwright-core';

// Chromium as a test browser on a build machine: no sandbox (containers run as root), no GPU, no
// network of its own (updates, sync, QUIC probes), a profile nobody used before.
const BROWSER_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const STEP_TIMEOUT_MS = 20_000;

function usage(message) {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    inspector: { type: 'string' },
    url: { type: 'string' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    text: { type: 'string', default: 'hello from the MCP Inspector' },
    screenshots: { type: 'string' },
    'timeout-ms': { type: 'string', default: '90000' },
  },
});
if (!values.inspector || !values.url) usage('usage: inspector_oauth.mjs --inspector URL --url MCP_URL [--chromium PATH]');

const withoutQuery = (url) => url.split('?', 1)[0];

async function run(page, shot) {
  // Loopback only: anything else the page or the browser asks for is refused and reported.
  const blocked = [];
  await page.context().route('**/*', (route) => {
    const { hostname } = new URL(route.request().url());
    if (hostname === '127.0.0.1' || hostname === 'localhost') return route.continue();
    blocked.push(route.request().url());
    return route.abort();
  });
  const navigations = [];
  page.on('request', (request) => {
    if (request.isNavigationRequest() && request.frame() === page.mainFrame()) {
      navigations.push(withoutQuery(request.url()));
    }
  });
  let clientId = '';
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (request.isNavigationRequest() && url.pathname === '/authorize' && !clientId) {
      clientId = url.searchParams.get('client_id') ?? '';
    }
  });

  // The Inspector, configured as a person would: transport, URL, Connect.
  await page.goto(values.inspector);
  await page.locator('#transport-type-select').click();
  await page.getByRole('option', { name: 'Streamable HTTP' }).click();
  await page.locator('#sse-url-input').fill(values.url);
  await shot('1-inspector');
  await page.getByRole('button', { name: 'Connect' }).click();

  // The server answers 401; the Inspector registers itself and sends the browser to the consent page.
  const allow = page.getByRole('button', { name: 'Allow' });
  await allow.waitFor();
  const consent = (await page.locator('h1').innerText()).trim();
  await shot('2-consent');
  await allow.click();

  // The upstream issuer's login page.
  const signIn = page.getByRole('button', { name: 'Sign in' });
  await signIn.waitFor();
  await shot('3-login');
  await signIn.click();

  // Back in the Inspector: it redeems the code, connects, lists the tools and calls echo.
  await page.getByText('Connected', { exact: true }).waitFor();
  await page.getByRole('tab', { name: 'Tools' }).click();
  await page.getByRole('button', { name: 'List Tools' }).click();
  await page.getByText('echo', { exact: true }).first().click();
  await page.locator('textarea#text').fill(values.text);
  await page.getByRole('button', { name: 'Run Tool' }).click();
  const heading = page.locator('h4', { hasText: 'Tool Result:' });
  await heading.waitFor();
  await page.getByText(`"${values.text}"`).first().waitFor();
  await heading.scrollIntoViewIfNeeded();
  await shot('4-tool-result');
  const result = await heading.evaluate((h) => {
    const parts = [h.innerText];
    for (let element = h.nextElementSibling; element; element = element.nextElementSibling) {
      parts.push(element.innerText);
    }
    return parts.join('\n');
  });
  const history = await page.locator('li span.font-mono').allInnerTexts();
  return { clientId, consent, navigations, history, result, blocked };
}

async function main() {
  const profile = mkdtempSync(join(tmpdir(), 'inspector-chromium-'));
  if (values.screenshots) mkdirSync(values.screenshots, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: values.chromium,
    headless: true,
    args: BROWSER_FLAGS,
    viewport: { width: 1440, height: 1000 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  const shot = async (name) => {
    if (values.screenshots) await page.screenshot({ path: join(values.screenshots, `${name}.png`) });
  };
  const deadline = setTimeout(() => {
    process.stderr.write(`no result after ${values['timeout-ms']} ms at ${page.url()}\n`);
    process.exit(1);
  }, Number(values['timeout-ms']));
  try {
    const outcome = await run(page, shot);
    process.stdout.write(`RESULT ${JSON.stringify(outcome)}\n`);
  } catch (error) {
    await shot('failed').catch(() => {});
    const body = await page.locator('body').innerText().catch(() => '');
    process.stderr.write(`${error.stack ?? error}\nat ${page.url()}:\n${body.slice(0, 2000)}\n`);
    process.exitCode = 1;
  } finally {
    clearTimeout(deadline);
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

await main();
