// load: a closed-loop load generator built on the official JS SDK client (@a2a-js/sdk 1.3.0).
//
//   node load.mjs <baseURL> <concurrency> <durationSeconds>
//
// Creates one client per worker (ClientFactory.createFromUrl, so each fetches the card) before timing starts, then
// every worker calls sendMessage({message: "ping"}) back to back until the duration is over. Prints one JSON line:
//   {"requests": <successful calls>, "errors": <failed calls>, "seconds": <measured time>, "rps": requests/seconds,
//    "p50_ms": <median latency of successful calls>, "p99_ms": <99th percentile>}
// and exits 0 (1 on bad usage or when no client could be created). With env TOKEN set, every request carries
// "Authorization: Bearer <TOKEN>". The first error message, if any, is printed on stderr.
import { randomUUID } from 'node:crypto';
import { require } from './common.mjs';

const sdk = require('@a2a-js/sdk');
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, createAuthenticatingFetchWithRetry } =
  require('@a2a-js/sdk/client');

const [baseURL, concArg, durArg] = process.argv.slice(2);
const concurrency = Number(concArg);
const duration = Number(durArg);
if (!baseURL || !(concurrency >= 1) || !(duration > 0)) {
  console.error('usage: node load.mjs <baseURL> <concurrency> <durationSeconds>');
  process.exit(1);
}

const token = process.env.TOKEN || '';
const fetchImpl = token
  ? createAuthenticatingFetchWithRetry(fetch, {
      headers: async () => ({ Authorization: `Bearer ${token}` }),
      shouldRetryWithHeaders: async () => undefined,
    })
  : fetch;
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }),
);
const base = baseURL.endsWith('/') ? baseURL : `${baseURL}/`;

function ping() {
  const req = sdk.SendMessageRequest.fromJSON({ configuration: {} });
  req.message = sdk.Message.fromJSON({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'ping', mediaType: 'text/plain' }] });
  return req;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round(sorted[i] * 1000) / 1000;
}

async function main() {
  const clients = await Promise.all(Array.from({ length: concurrency }, () => factory.createFromUrl(base)));
  const latencies = [];
  let errors = 0;
  let firstError = null;
  const start = performance.now();
  const deadline = start + duration * 1000;
  // A stuck server must not keep us alive: report whatever was measured 10 s after the deadline.
  const guard = setTimeout(() => report(performance.now()), duration * 1000 + 10000);
  async function worker(client) {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        await client.sendMessage(ping());
        latencies.push(performance.now() - t0);
      } catch (err) {
        errors++;
        firstError ??= err;
      }
    }
  }
  let reported = false;
  function report(end) {
    if (reported) return;
    reported = true;
    clearTimeout(guard);
    const seconds = (end - start) / 1000;
    const sorted = Float64Array.from(latencies).sort();
    if (firstError) console.error(`first error: ${firstError?.message ?? firstError}`);
    const out = {
      requests: latencies.length,
      errors,
      seconds: Math.round(seconds * 1000) / 1000,
      rps: Math.round((latencies.length / seconds) * 10) / 10,
      p50_ms: percentile(sorted, 50),
      p99_ms: percentile(sorted, 99),
    };
    process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));
  }
  await Promise.all(clients.map(worker));
  report(performance.now());
}

main().catch((err) => {
  console.error(err?.stack ?? String(err));
  process.exit(1);
});
