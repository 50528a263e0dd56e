#!/usr/bin/env node
// The official TypeScript SDK client (@modelcontextprotocol/sdk, from node_modules) completing an
// elicitation against a running endpoint (`python -m local --fixtures conformance`):
//
//   node local/clients/ts_elicitation_client.mjs --url http://127.0.0.1:8000/mcp --key K
//
// It declares the elicitation capability, answers every elicitation/create with `--action`
// (default accept) and `--content` (JSON, default a username and an email), calls `--tool`
// (default test_elicitation) with `--arguments` (JSON), and prints one JSON object on stdout:
// the SDK version, the negotiated protocol version, the elicitations it answered and the tool
// result. Exit 1 on any failure (connection, protocol, a tool error, no elicitation received),
// 2 on bad usage; the whole run is bounded by `--timeout-ms`.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const DEFAULT_CONTENT = { username: 'ts-sdk-user', email: 'ts-sdk@example.com' };

function usage(message) {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function json(text, what) {
  try {
    return JSON.parse(text);
  } catch (error) {
    return usage(`--${what} is not JSON: ${error.message}`);
  }
}

function sdkVersion() {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@modelcontextprotocol/sdk/client/index.js');
  const root = entry.slice(0, entry.lastIndexOf('/dist/'));
  return JSON.parse(readFileSync(`${root}/package.json`, 'utf8')).version;
}

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    key: { type: 'string', default: process.env.MCP_API_KEY ?? '' },
    tool: { type: 'string', default: 'test_elicitation' },
    arguments: { type: 'string', default: '{"message":"Your details?"}' },
    action: { type: 'string', default: 'accept' },
    content: { type: 'string', default: JSON.stringify(DEFAULT_CONTENT) },
    'timeout-ms': { type: 'string', default: '60000' },
  },
});
if (!values.url) usage('--url is required (e.g. http://127.0.0.1:8000/mcp)');
if (!['accept', 'decline', 'cancel'].includes(values.action)) usage('--action: accept, decline or cancel');
const toolArguments = json(values.arguments, 'arguments');
const answerContent = json(values.content, 'content');
const timeoutMs = Number(values['timeout-ms']);

const deadline = setTimeout(() => {
  process.stderr.write(`timed out after ${timeoutMs} ms\n`);
  process.exit(1);
}, timeoutMs);

const elicitations = [];
const client = new Client(
  { name: 'ts-elicitation-client', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicitations.push({ message: request.params.message, requestedSchema: request.params.requestedSchema });
  return values.action === 'accept' ? { action: 'accept', content: answerContent } : { action: values.action };
});

const headers = values.key ? { Authorization: `Bearer ${values.key}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(values.url), { requestInit: { headers } });

let code = 1;
try {
  await client.connect(transport);
  const result = await client.callTool({ name: values.tool, arguments: toolArguments });
  process.stdout.write(
    `${JSON.stringify(
      {
        sdkVersion: sdkVersion(),
        requestedProtocolVersion: LATEST_PROTOCOL_VERSION,
        negotiatedProtocolVersion: transport.protocolVersion ?? null,
        server: client.getServerVersion() ?? null,
        elicitations,
        result,
      },
      null,
      2,
    )}\n`,
  );
  if (result.isError) process.stderr.write('the tool returned an error result\n');
  else if (elicitations.length === 0) process.stderr.write('the tool completed without eliciting\n');
  else code = 0;
} catch (error) {
  process.stderr.write(`failed: ${error?.stack ?? error}\n`);
} finally {
  await transport.terminateSession().catch(() => {});
  await client.close().catch(() => {});
  clearTimeout(deadline);
}
process.exit(code);
