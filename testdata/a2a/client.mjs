// client: drives an A2A server with the official JS SDK client (@a2a-js/sdk 1.3.0: ClientFactory.createFromUrl).
//
//   node client.mjs <baseURL> <scenario> [jsonArgs]
//
// Prints exactly one JSON line on stdout and exits 0, also when the call fails: then the line is
// {"error": {"name", "message", "code"?}} (code: the JSON-RPC error code when the SDK error carries one; streaming
// scenarios add the "events" received before the failure). With env TOKEN set, every HTTP request (card included)
// carries "Authorization: Bearer <TOKEN>". Results are converted from the SDK's in-memory objects to v1.0 wire
// JSON (ProtoJSON) with the SDK's own toJSON functions.
//
// Scenarios (jsonArgs is a JSON object; every scenario also takes timeoutMs, default 30000):
//   card                                   -> the agent card as fetched by the SDK's card resolver
//   send {text, contextId?, taskId?, returnImmediately?, historyLength?}
//                                          -> {"kind": "task"|"message", "result": Task|Message}
//   stream {text, contextId?, taskId?}     -> {"events": [StreamResponse, ...]}
//   get {id, historyLength?}               -> Task
//   list {contextId?, status?, pageSize?, pageToken?, includeArtifacts?, historyLength?} -> ListTasksResponse
//   cancel {id}                            -> Task
//   resubscribe {id}                       -> {"events": [StreamResponse, ...]}   (client.resubscribeTask)
//   stream-cancel {text, afterEvents=1}    -> {"events": [...], "cancelled": Task}
//   v03-send {text, contextId?, taskId?}   -> {"kind", "result", "wire"}  over v0.3 only (legacy transport)
//   v03-stream {text, contextId?, taskId?} -> {"events": [...], "wire": [...]}  over v0.3 only
// The v03 scenarios use the SDK's v0.3 compatibility (legacyCompat on the card resolver and the JSON-RPC transport)
// and drop every non-0.x interface from the card, so the client speaks v0.3 even when 1.0 is offered too. "result"
// and "events" are the SDK's conversion to v1.0 shapes; "wire" holds the raw v0.3 JSON-RPC results as received.
import { randomUUID } from 'node:crypto';
import { require } from './common.mjs';

const sdk = require('@a2a-js/sdk');
const {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  createAuthenticatingFetchWithRetry,
} = require('@a2a-js/sdk/client');

const [baseURL, scenario, rawArgs] = process.argv.slice(2);

let printed = false;
function print(obj) {
  if (printed) return;
  printed = true;
  process.stdout.write(JSON.stringify(obj) + '\n', () => process.exit(0));
}

function errorJSON(err) {
  const out = { name: err?.name ?? 'Error', message: err?.message ?? String(err) };
  const code = err?.envelopeCode ?? (typeof err?.code === 'number' ? err.code : undefined);
  if (code !== undefined) out.code = code;
  return out;
}

// ---- HTTP: bearer token and (for the v0.3 scenarios) a copy of every response body.
const token = process.env.TOKEN || '';
let recorded = null; // when an array, the fetch wrapper pushes a clone of each JSON-RPC response into it
const recordingFetch = async (input, init) => {
  const res = await fetch(input, init);
  if (recorded && init?.method === 'POST') recorded.push(res.clone());
  return res;
};
const fetchImpl = token
  ? createAuthenticatingFetchWithRetry(recordingFetch, {
      headers: async () => ({ Authorization: `Bearer ${token}` }),
      shouldRetryWithHeaders: async () => undefined,
    })
  : recordingFetch;

// wireResults reads the recorded responses: JSON-RPC bodies and SSE `data:` lines, returning each envelope's
// result (or error) in order.
async function wireResults() {
  const out = [];
  for (const res of recorded ?? []) {
    const body = await res.text();
    const payloads = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? body.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim())
      : [body];
    for (const p of payloads) {
      try {
        const env = JSON.parse(p);
        out.push('result' in env ? env.result : { error: env.error });
      } catch {
        out.push({ unparsed: p });
      }
    }
  }
  return out;
}

const isV03 = (v) => /^0\./.test(String(v ?? '').trim());

function factory(v03) {
  const compat = v03 ? { legacyCompat: { enabled: true } } : {};
  let cardResolver = new DefaultAgentCardResolver({ fetchImpl, ...compat });
  if (v03) {
    const inner = cardResolver;
    cardResolver = {
      async resolve(base, path) {
        const card = await inner.resolve(base, path);
        const only = (card.supportedInterfaces ?? []).filter((i) => isV03(i.protocolVersion));
        if (only.length === 0) throw new Error('the agent card offers no v0.3 interface');
        return { ...card, supportedInterfaces: only };
      },
    };
  }
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, ...compat }), new RestTransportFactory({ fetchImpl, ...compat })],
      cardResolver,
    }),
  );
}

// The SDK resolves relative to the base URL, so make sure it ends with a slash.
const base = baseURL?.endsWith('/') ? baseURL : `${baseURL}/`;
const connect = (v03 = false) => factory(v03).createFromUrl(base);

function userMessage(a) {
  return sdk.Message.fromJSON({
    messageId: randomUUID(),
    role: 'ROLE_USER',
    parts: [{ text: String(a.text ?? ''), mediaType: 'text/plain' }],
    ...(a.contextId ? { contextId: a.contextId } : {}),
    ...(a.taskId ? { taskId: a.taskId } : {}),
  });
}

function sendRequest(a) {
  const configuration = {};
  if (a.returnImmediately !== undefined) configuration.returnImmediately = !!a.returnImmediately;
  if (a.historyLength !== undefined) configuration.historyLength = a.historyLength;
  const req = sdk.SendMessageRequest.fromJSON({ configuration });
  req.message = userMessage(a);
  return req;
}

const sendResult = (r) => ('messageId' in r ? { kind: 'message', result: sdk.Message.toJSON(r) } : { kind: 'task', result: sdk.Task.toJSON(r) });
const eventJSON = (ev) => sdk.StreamResponse.toJSON(ev);
const taskIdOf = (ev) => {
  const p = ev.payload;
  if (!p) return '';
  return p.$case === 'task' ? p.value.id : p.$case === 'message' ? p.value.taskId : p.value.taskId;
};

let events = null; // streaming scenarios collect here, so that a failure can report what arrived

async function collect(iterable) {
  events = [];
  for await (const ev of iterable) events.push(eventJSON(ev));
  return events;
}

const scenarios = {
  async card() {
    const card = await new DefaultAgentCardResolver({ fetchImpl }).resolve(base);
    return JSON.stringify(card).includes('"$case"') ? sdk.AgentCard.toJSON(card) : card;
  },
  async send(a) {
    const client = await connect();
    return sendResult(await client.sendMessage(sendRequest(a)));
  },
  async stream(a) {
    const client = await connect();
    return { events: await collect(client.sendMessageStream(sendRequest(a))) };
  },
  async get(a) {
    const client = await connect();
    return sdk.Task.toJSON(await client.getTask(sdk.GetTaskRequest.fromJSON({ id: a.id, historyLength: a.historyLength })));
  },
  async list(a) {
    const client = await connect();
    const req = sdk.ListTasksRequest.fromJSON({
      contextId: a.contextId,
      status: a.status,
      pageSize: a.pageSize,
      pageToken: a.pageToken,
      includeArtifacts: a.includeArtifacts,
      historyLength: a.historyLength,
    });
    return sdk.ListTasksResponse.toJSON(await client.listTasks(req));
  },
  async cancel(a) {
    const client = await connect();
    return sdk.Task.toJSON(await client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: a.id })));
  },
  async resubscribe(a) {
    const client = await connect();
    return { events: await collect(client.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: a.id }))) };
  },
  async 'stream-cancel'(a) {
    const client = await connect();
    const after = a.afterEvents ?? 1;
    events = [];
    let cancelling = null;
    for await (const ev of client.sendMessageStream(sendRequest(a))) {
      events.push(eventJSON(ev));
      if (!cancelling && events.length >= after) {
        const id = taskIdOf(ev);
        if (!id) throw new Error('no task id in the stream to cancel');
        cancelling = client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id }));
        cancelling.catch(() => {}); // awaited below; avoid an unhandled rejection while the stream is read
      }
    }
    if (!cancelling) throw new Error(`the stream ended after ${events.length} events, before the cancel`);
    return { events, cancelled: sdk.Task.toJSON(await cancelling) };
  },
  async 'v03-send'(a) {
    const client = await connect(true);
    recorded = [];
    const out = sendResult(await client.sendMessage(sendRequest(a)));
    const wire = await wireResults();
    return { ...out, wire: wire[0] };
  },
  async 'v03-stream'(a) {
    const client = await connect(true);
    recorded = [];
    await collect(client.sendMessageStream(sendRequest(a)));
    return { events, wire: await wireResults() };
  },
};

async function main() {
  const args = rawArgs ? JSON.parse(rawArgs) : {};
  const run = scenarios[scenario];
  if (!baseURL || !run) {
    throw new Error(`usage: node client.mjs <baseURL> <${Object.keys(scenarios).join('|')}> [jsonArgs]`);
  }
  const timeoutMs = args.timeoutMs ?? 30000;
  setTimeout(() => {
    const err = { error: { name: 'Timeout', message: `scenario ${scenario} did not finish within ${timeoutMs} ms` } };
    print(events ? { ...err, events } : err);
  }, timeoutMs);
  print(await run(args));
}

main().catch((err) => {
  print(events ? { error: errorJSON(err), events } : { error: errorJSON(err) });
});
