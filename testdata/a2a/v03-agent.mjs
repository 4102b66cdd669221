// v03: a native A2A v0.3 agent built on @a2a-js/sdk 0.3.14 (installed under the alias a2a-sdk-v03), which has
// no v1.0 code at all: v0.3 card (url, preferredTransport JSONRPC, protocolVersion 0.3.0), v0.3 method names and
// `kind` shapes. Like the task agent, each message runs as a task: task (submitted) -> status-update working
// "working on it" -> artifact-update "result" [text "V03 TURN <n>: <UPPERCASED text>", file
// {uri https://example.com/v03/<lowercased first word>, name "V03 doc", mimeType text/html}] -> status-update
// completed (final). n counts the user messages of the contextId. tasks/cancel stops a running task.
// Being a pre-1.0 server, it ignores the A2A-Version header.
import { randomUUID } from 'node:crypto';
import { importESM, createApp, listen, announce, exitWithParent, fail } from './common.mjs';

// ES-module builds on purpose: see importESM in common.mjs (the CommonJS ones turn -32001/-32002 into -32603).
const { AGENT_CARD_PATH } = await importESM('a2a-sdk-v03');
const { DefaultRequestHandler, InMemoryTaskStore } = await importESM('a2a-sdk-v03/server');
const { agentCardHandler, jsonRpcHandler, UserBuilder } = await importESM('a2a-sdk-v03/server/express');

const turns = new Map(); // contextId -> user messages seen
const running = new Map(); // taskId -> { contextId, cancelled, wake }
const now = () => new Date().toISOString();
const textOf = (m) => (m?.parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');
const agentText = (taskId, contextId, text) => ({ kind: 'message', role: 'agent', messageId: randomUUID(), taskId, contextId, parts: [{ kind: 'text', text }] });
const statusUpdate = (taskId, contextId, state, final, text) => ({
  kind: 'status-update',
  taskId,
  contextId,
  final,
  status: { state, timestamp: now(), ...(text === undefined ? {} : { message: agentText(taskId, contextId, text) }) },
});

const executor = (stats) => ({
  async execute(ctx, bus) {
    const { taskId, contextId, userMessage } = ctx;
    const text = textOf(userMessage);
    const n = (turns.get(contextId) ?? 0) + 1;
    turns.set(contextId, n);
    const word = (text.trim().split(/\s+/)[0] ?? '').toLowerCase();
    const run = { contextId, cancelled: false, wake: () => {} };
    running.set(taskId, run);
    try {
      bus.publish(ctx.task ?? { kind: 'task', id: taskId, contextId, status: { state: 'submitted', timestamp: now() }, history: [userMessage], artifacts: [] });
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, 30);
        run.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (run.cancelled) return;
      bus.publish(statusUpdate(taskId, contextId, 'working', false, 'working on it'));
      bus.publish({
        kind: 'artifact-update',
        taskId,
        contextId,
        lastChunk: true,
        artifact: {
          artifactId: `result-${taskId}`,
          name: 'result',
          parts: [
            { kind: 'text', text: `V03 TURN ${n}: ${text.toUpperCase()}` },
            { kind: 'file', file: { uri: `https://example.com/v03/${encodeURIComponent(word)}`, name: 'V03 doc', mimeType: 'text/html' } },
          ],
        },
      });
      bus.publish(statusUpdate(taskId, contextId, 'completed', true));
      bus.finished();
    } finally {
      if (running.get(taskId) === run) running.delete(taskId);
    }
  },
  async cancelTask(taskId, bus) {
    const run = running.get(taskId);
    if (run) {
      run.cancelled = true;
      run.wake();
    }
    stats.canceledTasks++;
    bus.publish(statusUpdate(taskId, run?.contextId ?? '', 'canceled', true, 'canceled'));
    bus.finished();
  },
});

async function main() {
  exitWithParent();
  const { app, stats, token } = createApp();
  const base = await listen(app);
  const card = {
    name: 'v03',
    description:
      'A native A2A v0.3 agent (no v1.0 support). Runs each message as a streaming task whose artifact "result" ' +
      'holds "V03 TURN <n>: <UPPERCASED text>" and a file link; n counts the messages of the context.',
    url: `${base}/`,
    preferredTransport: 'JSONRPC',
    protocolVersion: '0.3.0',
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'shout-v03', name: 'Shout (v0.3)', description: 'Upper-cases the text and numbers the turns of the conversation.', tags: ['v0.3', 'task', 'test'] },
      { id: 'docs-v03', name: 'Docs file (v0.3)', description: 'Returns a v0.3 file part linking a page about the first word.', tags: ['v0.3', 'file', 'test'] },
    ],
  };
  if (token) {
    card.securitySchemes = { bearer: { type: 'http', scheme: 'bearer' } };
    card.security = [{ bearer: [] }];
  }
  class Counting extends DefaultRequestHandler {
    async cancelTask(params, context) {
      stats.cancels++;
      return super.cancelTask(params, context);
    }
  }
  const handler = new Counting(card, new InMemoryTaskStore(), executor(stats));
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  announce(base);
}

main().catch(fail);
