// A small MCP client on the official TypeScript SDK, for the Go tests of `agenthost serve`. It connects over stdio
// (spawning --command with --arg and --env, as Claude Desktop does) or streamable HTTP (--url, with --header),
// performs one action, and prints one JSON object on stdout: what the test asserts on. It exits 1 when the action
// failed; the JSON then has "error".
//
// Over HTTP it may authorize with the SDK's OAuth support: --oauth runs the authorization code flow with an
// in-memory provider (discovery from the server's 401, dynamic registration, PKCE; the authorization server must
// redirect at once, as a user who consents would be, and the client follows that redirect itself), and
// --client-id with --client-secret, --issuer and --scope the client credentials grant. "oauth" in the output tells what
// happened: the flows run and the scopes of the token obtained.
//
// Actions:
//   tools   list the tools
//   ask     call --tool once per --prompt, with a progress token; every call after the first continues the
//           conversation of the one before it (conversation_id from its structured content), and the first
//           continues --conversation when it is given; with --output-schema FILE, each call passes that JSON
//           Schema as output_schema (the SDK checks the structured content against the tool's output schema)
//   cancel  call --tool with --prompt and abort the call when a progress message contains --cancel-on; then wait
//           until --await-file holds --await-text, and list the tools again to show the session survived
//   prompts list the prompts, get --get-prompt with the arguments --prompt-arg NAME=VALUE, and, with --complete
//           ARG=VALUE, complete that argument of --get-prompt
//   resources  list the resources and resource templates, and read each --read URI
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

import {
  Client,
  ClientCredentialsProvider,
  StdioClientTransport,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from './sdk.mjs';

const { values: opts } = parseArgs({
  options: {
    command: { type: 'string' },
    arg: { type: 'string', multiple: true, default: [] },
    env: { type: 'string', multiple: true, default: [] },
    url: { type: 'string' },
    header: { type: 'string', multiple: true, default: [] },
    action: { type: 'string', default: 'tools' },
    tool: { type: 'string' },
    prompt: { type: 'string', multiple: true, default: [] },
    conversation: { type: 'string' },
    'cancel-on': { type: 'string' },
    'await-file': { type: 'string' },
    'await-text': { type: 'string' },
    oauth: { type: 'boolean', default: false },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    issuer: { type: 'string' },
    scope: { type: 'string' },
    'get-prompt': { type: 'string' },
    'prompt-arg': { type: 'string', multiple: true, default: [] },
    complete: { type: 'string' },
    read: { type: 'string', multiple: true, default: [] },
    'output-schema': { type: 'string' },
  },
});

const out = {};
// currentProgress collects the progress of the call in flight, or of the last one.
let currentProgress;

// unknown returns the message a report of the SDK quotes after prefix, or undefined.
function unknown(report, prefix) {
  if (!report.startsWith(prefix)) return undefined;
  try {
    return JSON.parse(report.slice(prefix.length));
  } catch {
    return undefined;
  }
}

// A test that hangs is worse than one that fails: give up well before the Go test's own deadline.
setTimeout(() => finish(new Error('mcp-client: gave up after 45s')), 45_000).unref();

function pairs(list, sep) {
  const obj = {};
  for (const item of list) {
    const i = item.indexOf(sep);
    if (i < 0) throw new Error(`mcp-client: ${JSON.stringify(item)} has no ${JSON.stringify(sep)}`);
    obj[item.slice(0, i).trim()] = item.slice(i + 1).trim();
  }
  return obj;
}

// credentials is the client credentials provider, when --client-id is given.
let credentials;

// codeProvider is an OAuth client provider for the authorization code flow that keeps everything in memory. Its
// "browser" fetches the authorization URL and keeps the code of the redirect.
function codeProvider(report) {
  const redirectUrl = 'http://127.0.0.1:9/callback'; // never listened on: the redirect is read, not followed
  let client, tokens, verifier;
  return {
    get redirectUrl() {
      return redirectUrl;
    },
    get clientMetadata() {
      return { client_name: 'agenthost-test-client', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'], token_endpoint_auth_method: 'none' };
    },
    clientInformation: () => client,
    saveClientInformation: (info) => {
      client = info;
      report.registered = true;
    },
    tokens: () => tokens,
    saveTokens: (t) => {
      tokens = t;
      report.scope = t.scope ?? null;
    },
    saveCodeVerifier: (v) => {
      verifier = v;
    },
    codeVerifier: () => verifier,
    redirectToAuthorization: async (url) => {
      report.authorization_url = url.toString();
      const resp = await fetch(url, { redirect: 'manual' });
      const location = resp.headers.get('location');
      if (!location) throw new Error(`mcp-client: the authorization server answered ${resp.status} without a redirect`);
      report.code = new URL(location).searchParams.get('code');
    },
  };
}

// connect connects client, running the authorization code flow first when the server asks for it.
async function connect(client) {
  if (!opts.oauth) {
    await client.connect(transport());
    return;
  }
  const report = (out.oauth = { flows: [] });
  const provider = codeProvider(report);
  // The first attempt only gets the authorization code. It is made with a client of its own, so that what it
  // reports (the 401 that starts the flow, its transport aborted when it gives up) is not taken for this client's.
  const probe = new Client({ name: 'agenthost-test-client', version: '1.0.0' });
  probe.onerror = () => {};
  try {
    await probe.connect(transport(provider));
    await probe.close();
    throw new Error('mcp-client: --oauth, but the server let the client in without authorization');
  } catch (err) {
    if (!(err instanceof UnauthorizedError) || !report.code) throw err;
  }
  report.flows.push('authorization_code');
  const t = transport(provider);
  await t.finishAuth(report.code);
  await client.connect(t);
}

function transport(authProvider) {
  if (opts.url) {
    if (!authProvider && opts['client-id']) {
      out.oauth = { flows: ['client_credentials'] };
      authProvider = credentials = new ClientCredentialsProvider({ clientId: opts['client-id'],
        clientSecret: opts['client-secret'], expectedIssuer: opts.issuer, scope: opts.scope });
    }
    return new StreamableHTTPClientTransport(new URL(opts.url), {
      requestInit: { headers: pairs(opts.header, ':') },
      authProvider,
    });
  }
  if (!opts.command) throw new Error('mcp-client: --command or --url is required');
  return new StdioClientTransport({ command: opts.command, args: opts.arg, env: pairs(opts.env, '='), stderr: 'inherit' });
}

function finish(err) {
  if (err) {
    out.error = { message: String(err?.message ?? err), code: err?.code ?? null };
  }
  process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(err ? 1 : 0));
}

async function main() {
  const client = new Client({ name: 'agenthost-test-client', version: '1.0.0' });
  // The SDK reports what it cannot hand to a caller through onerror. Two reports are sorted out of the rest:
  // - A progress notification for a call that has ended. The SDK handles notifications a tick later than responses,
  //   so one that a server writes just before its result (an agent's last streamed text, say) is reported this way
  //   though it arrived in time (typescript-sdk issue 2580). It is kept, marked late, with its call's progress.
  // - A response to a call the client cancelled: the server should not send one, but servers on the Go SDK do (go-sdk
  //   issues 1235 and 1259).
  // A request the SDK aborts itself (its standalone SSE stream, when it authorizes again after a 403 step-up, say)
  // is counted in "aborted": it is the client's own doing, not the server's.
  out.protocol_errors = [];
  out.late_responses = [];
  out.aborted = 0;
  client.onerror = (err) => {
    const msg = String(err?.message ?? err);
    if (err?.name === 'AbortError' || msg === 'This operation was aborted') {
      out.aborted++;
      return;
    }
    const late = unknown(msg, 'Received a progress notification for an unknown token: ');
    if (late && currentProgress) {
      currentProgress.push({ ...late.params, late: true });
      return;
    }
    const response = unknown(msg, 'Received a response for an unknown message ID: ');
    if (response) {
      out.late_responses.push(response);
      return;
    }
    out.protocol_errors.push(msg);
  };
  await connect(client);
  if (credentials) out.oauth.scope = credentials.tokens()?.scope ?? null;
  out.server = client.getServerVersion();
  // Listing the tools also makes the SDK validate structured content against each tool's output schema.
  const { tools } = await client.listTools();
  out.tools = tools;
  const tool = opts.tool ?? tools[0]?.name;

  switch (opts.action) {
    case 'tools':
      break;
    case 'ask': {
      out.calls = [];
      let conversation = opts.conversation;
      for (const prompt of opts.prompt) {
        const progress = (currentProgress = []);
        const args = { prompt };
        if (conversation) args.conversation_id = conversation;
        if (opts['output-schema']) args.output_schema = JSON.parse(readFileSync(opts['output-schema'], 'utf8'));
        const result = await client.callTool({ name: tool, arguments: args }, undefined, {
          onprogress: (p) => progress.push(p),
        });
        out.calls.push({ result, progress });
        conversation = result.structuredContent?.conversation_id;
      }
      break;
    }
    case 'cancel': {
      const progress = (currentProgress = []);
      const abort = new AbortController();
      out.cancel = { progress };
      try {
        const result = await client.callTool({ name: tool, arguments: { prompt: opts.prompt[0] ?? 'wait' } }, undefined, {
          signal: abort.signal,
          onprogress: (p) => {
            progress.push(p);
            if (opts['cancel-on'] && String(p.message ?? '').includes(opts['cancel-on'])) abort.abort('cancelled by the test');
          },
        });
        out.cancel.result = result; // not cancelled: the test fails on this
      } catch (err) {
        out.cancel.error = String(err?.message ?? err);
      }
      if (opts['await-file']) {
        out.cancel.awaited = await awaitFile(opts['await-file'], opts['await-text'] ?? '');
      }
      const after = await client.listTools();
      out.cancel.tools_after = after.tools.map((t) => t.name);
      break;
    }
    case 'prompts': {
      out.prompts = (await client.listPrompts()).prompts;
      if (opts['get-prompt']) {
        out.prompt = await client.getPrompt({ name: opts['get-prompt'], arguments: pairs(opts['prompt-arg'], '=') });
      }
      if (opts.complete) {
        const [[name, value]] = Object.entries(pairs([opts.complete], '='));
        out.completion = (await client.complete({ ref: { type: 'ref/prompt', name: opts['get-prompt'] }, argument: { name, value } })).completion;
      }
      break;
    }
    case 'resources': {
      out.resources = (await client.listResources()).resources;
      out.resource_templates = (await client.listResourceTemplates()).resourceTemplates;
      out.reads = [];
      for (const uri of opts.read) out.reads.push(await client.readResource({ uri }));
      break;
    }
    default:
      throw new Error(`mcp-client: unknown action ${JSON.stringify(opts.action)}`);
  }
  await client.close();
}

// awaitFile polls path until it contains text, and returns its content (what it holds after 30s otherwise).
async function awaitFile(path, text) {
  let content = '';
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(50)) {
    try {
      content = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    if (content.includes(text)) break;
  }
  return content;
}

main().then(() => finish(), finish);
