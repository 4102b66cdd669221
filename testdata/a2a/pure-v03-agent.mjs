// pure-v03: a hand-written A2A v0.3 agent, express only, no A2A SDK. message/send (configuration.blocking must be
// true, else -32602 "blocking must be true") answers a completed task whose artifact "result" holds a text part
// "PURE: <text>" and a data part {"length": <number of characters of text>}; tasks/get and tasks/cancel work on
// those tasks; any other method is -32601. A request with A2A-Version 1.x (or later) gets -32009; no header or 0.x
// is served. No streaming.
import { randomUUID } from 'node:crypto';
import { require, createApp, listen, announce, exitWithParent, fail } from './common.mjs';

const express = require('express');
const tasks = new Map();
const rpcError = (code, message) => ({ code, message });

function handle(method, params = {}) {
  switch (method) {
    case 'message/send': {
      const m = params.message;
      if (!m || typeof m !== 'object' || !m.messageId || !Array.isArray(m.parts)) return { error: rpcError(-32602, 'message with messageId and parts is required') };
      if (params.configuration?.blocking !== true) return { error: rpcError(-32602, 'blocking must be true') };
      if (m.taskId) return { error: tasks.has(m.taskId) ? rpcError(-32004, 'task is in a terminal state') : rpcError(-32001, 'Task not found') };
      const text = m.parts.filter((p) => p?.kind === 'text').map((p) => p.text).join('');
      const id = randomUUID(), contextId = m.contextId || randomUUID();
      const task = {
        kind: 'task', id, contextId,
        status: { state: 'completed', timestamp: new Date().toISOString() },
        artifacts: [{ artifactId: randomUUID(), name: 'result', parts: [{ kind: 'text', text: `PURE: ${text}` }, { kind: 'data', data: { length: [...text].length } }] }],
        history: [{ ...m, kind: 'message', taskId: id, contextId }],
      };
      tasks.set(id, task);
      return { result: task };
    }
    case 'tasks/get': {
      const task = tasks.get(params.id);
      if (!task) return { error: rpcError(-32001, 'Task not found') };
      const n = params.historyLength;
      return { result: typeof n === 'number' && n >= 0 ? { ...task, history: n === 0 ? [] : task.history.slice(-n) } : task };
    }
    case 'tasks/cancel':
      return { error: tasks.has(params.id) ? rpcError(-32002, 'Task cannot be canceled') : rpcError(-32001, 'Task not found') };
    default:
      return { error: rpcError(-32601, 'Method not found') };
  }
}

async function main() {
  exitWithParent();
  const { app, stats, token } = createApp();
  const base = await listen(app);
  const card = {
    name: 'pure-v03', description: 'A hand-written A2A v0.3 agent without any SDK: message/send (blocking only) answers a completed task with "PURE: <text>" and the text length.',
    url: `${base}/`, preferredTransport: 'JSONRPC', protocolVersion: '0.3.0', version: '1.0.0',
    capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: 'pure', name: 'Pure', description: 'Prefixes the text with "PURE: " and reports its length as data.', tags: ['v0.3', 'test'] }],
    ...(token ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, security: [{ bearer: [] }] } : {}),
  };
  app.get('/.well-known/agent-card.json', (_req, res) => res.json(card));
  app.post('/', express.json({ type: () => true }), (req, res) => {
    const body = req.body, id = body?.id ?? null;
    const reply = (r) => res.json({ jsonrpc: '2.0', id, ...r });
    if (Number.parseInt(req.get('A2A-Version') || '0', 10) >= 1) return reply({ error: rpcError(-32009, `A2A-Version ${req.get('A2A-Version')} is not supported; this agent speaks 0.3 only`) });
    if (body?.jsonrpc !== '2.0' || typeof body.method !== 'string') return reply({ error: rpcError(-32600, 'Invalid Request') });
    if (body.method === 'tasks/cancel') stats.cancels++;
    reply(handle(body.method, body.params));
  });
  app.use((err, _req, res, _next) => res.status(err.status === 400 ? 200 : 500).json({ jsonrpc: '2.0', id: null, error: rpcError(-32700, 'Parse error') }));
  announce(base);
}

main().catch(fail);
