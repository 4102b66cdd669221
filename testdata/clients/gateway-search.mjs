// A client of gateway mode's search form on the official TypeScript SDK, for the Go test of `agenthost serve` with
// gateway_tools = "search". It spawns --command with --arg and --env over stdio, lists the tools, calls
// search_tools with --query, then call_tool with the first match's name and --arguments (a JSON object), and prints
// one JSON object on stdout: {tools, search, call}, or {error} with exit code 1.
import { parseArgs } from 'node:util';

import { Client, StdioClientTransport } from './sdk.mjs';

const { values: opts } = parseArgs({
  options: {
    command: { type: 'string' },
    arg: { type: 'string', multiple: true, default: [] },
    env: { type: 'string', multiple: true, default: [] },
    query: { type: 'string' },
    arguments: { type: 'string', default: '{}' },
  },
});

setTimeout(() => {
  process.stdout.write(JSON.stringify({ error: 'gateway-search: gave up after 90s' }));
  process.exit(1);
}, 90_000).unref();

const env = {};
for (const kv of opts.env) {
  const i = kv.indexOf('=');
  env[kv.slice(0, i)] = kv.slice(i + 1);
}
const client = new Client({ name: 'agenthost-test-client', version: '1.0.0' });
const out = {};
try {
  await client.connect(new StdioClientTransport({ command: opts.command, args: opts.arg, env: { ...process.env, ...env }, stderr: 'inherit' }));
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => t.name);
  out.search = await client.callTool({ name: 'search_tools', arguments: { query: opts.query, max_results: 5 } });
  const first = out.search.structuredContent?.tools?.[0];
  if (!first) throw new Error(`search_tools found nothing for ${JSON.stringify(opts.query)}`);
  out.call = await client.callTool({ name: 'call_tool', arguments: { name: first.name, arguments: JSON.parse(opts.arguments) } });
  await client.close();
  process.stdout.write(JSON.stringify(out));
} catch (err) {
  out.error = String(err?.stack ?? err);
  process.stdout.write(JSON.stringify(out));
  process.exit(1);
}
