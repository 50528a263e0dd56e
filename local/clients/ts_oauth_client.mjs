#!/usr/bin/env node
// The official TypeScript SDK client (@modelcontextprotocol/sdk, from node_modules) signing in to
// an MCP server through its OAuth authorization server with no prior registration: the SDK's own
// auth module (the one the MCP Inspector's web UI runs) discovers the server, registers itself
// (RFC 7591), and sends the person to the authorization URL.
//
//   node local/clients/ts_oauth_client.mjs --url http://127.0.0.1:8000/mcp --redirect http://127.0.0.1:3000/callback
//
// When a person must authorize, it prints `AUTHORIZE <url>` on stdout and reads, on stdin, the
// URL the browser was redirected to (the redirect URI with code, state and iss). It then finishes
// the sign-in, lists the tools, calls `echo`, and prints `RESULT <json>`: the client id it
// registered, the tool names, the echo. Exit 1 on any failure, 2 on bad usage; the whole run is
// bounded by `--timeout-ms`.

import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

class MemoryProvider {
  constructor(redirect) {
    this.redirect = redirect;
    this.client = undefined;
    this.saved = undefined;
    this.verifier = '';
    this.expectedState = '';
  }

  get redirectUrl() {
    return this.redirect;
  }

  get clientMetadata() {
    return {
      client_name: 'TypeScript SDK client',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    this.expectedState = randomUUID();
    return this.expectedState;
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(information) {
    this.client = information;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens) {
    this.saved = tokens;
  }

  redirectToAuthorization(url) {
    process.stdout.write(`AUTHORIZE ${url.toString()}\n`);
  }

  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }
}

function usage(message) {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

async function firstLine() {
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    return line.trim();
  }
  throw new Error('stdin closed before the browser landed on the redirect URI');
}

async function main() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      redirect: { type: 'string' },
      'timeout-ms': { type: 'string', default: '60000' },
    },
  });
  if (!values.url || !values.redirect) usage('usage: ts_oauth_client.mjs --url URL --redirect REDIRECT_URI');
  setTimeout(() => {
    process.stderr.write('timed out\n');
    process.exit(1);
  }, Number(values['timeout-ms'])).unref();

  const provider = new MemoryProvider(values.redirect);
  const url = new URL(values.url);
  let client = new Client({ name: 'ts-oauth-client', version: '1.0.0' });
  let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  try {
    await client.connect(transport);
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    const landed = new URL(await firstLine());
    if (landed.searchParams.get('state') !== provider.expectedState) throw new Error('state mismatch');
    await transport.finishAuth(landed.searchParams.get('code'));
    client = new Client({ name: 'ts-oauth-client', version: '1.0.0' });
    transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await client.connect(transport);
  }
  const tools = await client.listTools();
  const echoed = await client.callTool({ name: 'echo', arguments: { text: 'typescript' } });
  const result = {
    clientId: provider.client?.client_id,
    tools: tools.tools.map((tool) => tool.name),
    echo: echoed.content?.[0]?.text,
    scope: provider.saved?.scope,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  await client.close();
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error?.stack ?? error}\n`);
    process.exit(1);
  },
);
