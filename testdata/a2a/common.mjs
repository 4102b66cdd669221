// Shared preamble of the A2A test peers in this directory.
//
// The SDKs are pinned in ../peers (package.json + package-lock.json). ES modules do not search NODE_PATH and
// ../peers is not an ancestor of this directory, so packages are loaded through a require anchored there (every
// package used here ships a CommonJS build), or through importESM below.
//
// Nothing in this file loads an A2A SDK: pure-v03-agent.mjs uses it and must stay SDK-free.
import { createRequire } from 'node:module';
import { fstatSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const require = createRequire(new URL('../peers/package.json', import.meta.url));

// importESM loads the ES-module build of a package entry point that ships `dist/…/index.cjs` beside
// `dist/…/index.js`. @a2a-js/sdk 0.3.14 needs it: each of its CommonJS entry points inlines its own copy of the
// A2AError class, so an error thrown by `server` fails the `instanceof` check in `server/express` and goes out as
// -32603; its ES-module entry points share one copy.
export function importESM(specifier) {
  const cjs = require.resolve(specifier);
  if (!cjs.endsWith('.cjs')) throw new Error(`${specifier}: no .cjs entry to map to its ES module (${cjs})`);
  return import(pathToFileURL(cjs.slice(0, -'.cjs'.length) + '.js').href);
}

// stdout carries exactly one line (`listening http://127.0.0.1:<port>`) for the agents and one JSON line for the
// drivers. Anything a library prints with console.log/info/debug goes to stderr instead.
const toStderr = (...args) => console.error(...args);
console.log = toStderr;
console.info = toStderr;
console.debug = toStderr;

// exitWithParent makes a long-running peer exit cleanly (status 0) on SIGTERM/SIGINT, when its stdin is a pipe or
// socket that reaches end-of-file (the parent closed it or died), and when it is re-parented because its parent
// died. A stdin that is /dev/null or a terminal is not watched (a child started with no stdin does not exit at once).
export function exitWithParent() {
  const bye = () => process.exit(0);
  process.on('SIGTERM', bye);
  process.on('SIGINT', bye);
  let watchStdin = false;
  try {
    const st = fstatSync(0);
    watchStdin = st.isFIFO() || st.isSocket();
  } catch {
    watchStdin = false;
  }
  if (watchStdin) {
    process.stdin.on('end', bye);
    process.stdin.on('close', bye);
    process.stdin.on('error', bye);
    process.stdin.resume(); // discard whatever is written; we only wait for EOF
  }
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) bye();
  }, 500).unref();
}

// createApp builds the express app every agent shares: GET /stats, request accounting and optional bearer auth
// on the JSON-RPC endpoint (POST /). The agent mounts its card and JSON-RPC handler on the returned app, after
// these routes. stats.cancels is incremented by the agent wherever a cancel request reaches it.
export function createApp() {
  const express = require('express');
  const app = express();
  app.disable('x-powered-by');
  const stats = { cancels: 0, canceledTasks: 0, requests: 0, lastHeaders: {} };
  app.get('/stats', (_req, res) => res.json(stats));
  const token = process.env.TOKEN || '';
  app.use((req, res, next) => {
    if (req.method !== 'POST' || req.path !== '/') return next();
    stats.requests++;
    stats.lastHeaders = {
      'A2A-Version': req.get('A2A-Version') ?? null,
      'Content-Type': req.get('Content-Type') ?? null,
    };
    if (token && req.get('Authorization') !== `Bearer ${token}`) {
      res.status(401).set('WWW-Authenticate', 'Bearer').type('text/plain').send('unauthorized\n');
      return;
    }
    next();
  });
  return { app, stats, token };
}

// listen binds 127.0.0.1:$PORT (0 or unset: the OS picks) and resolves with the base URL, without printing.
// The agent then builds its card (which needs the port), mounts its routes and calls announce(base).
export function listen(app) {
  const port = Number(process.env.PORT || 0);
  return new Promise((resolve, reject) => {
    const server = app.listen(port, '127.0.0.1', (err) => {
      if (err) return reject(err);
      resolve(`http://127.0.0.1:${server.address().port}`);
    });
    server.on('error', reject);
  });
}

export function announce(base) {
  process.stdout.write(`listening ${base}\n`);
}

// fail prints a startup error to stderr and exits non-zero.
export function fail(err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
