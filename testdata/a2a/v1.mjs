// Helpers for the A2A v1.0 agents built on @a2a-js/sdk 1.3.0 (echo, task, failing).
//
// The SDK keeps ts-proto objects in memory (numeric enums, parts as {content:{$case,value}}); the helpers below
// build them from wire-shaped JSON with the SDK's own fromJSON, so no in-memory shape is written by hand.
import { randomUUID } from 'node:crypto';
import { require, createApp, listen, announce, exitWithParent } from './common.mjs';

const sdk = require('@a2a-js/sdk');
const server = require('@a2a-js/sdk/server');
const sx = require('@a2a-js/sdk/server/express');

export const { Role, TaskState, Message, Task, Artifact, AgentCard, AGENT_CARD_PATH } = sdk;
export const { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } = server;

// wireCard builds the v1.0 agent card as served on the wire (ProtoJSON). With TOKEN set it declares a bearer
// scheme; with COMPAT=1 it also offers a v0.3 JSON-RPC interface at the same URL (the SDK's compat layer serves it).
export function wireCard(base, { name, description, streaming, skills, compat, token }) {
  const url = `${base}/`;
  const supportedInterfaces = [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }];
  if (compat) supportedInterfaces.push({ url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' });
  const card = {
    name,
    description,
    version: '1.0.0',
    supportedInterfaces,
    capabilities: { streaming, pushNotifications: false, extendedAgentCard: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills,
  };
  if (token) {
    card.securitySchemes = { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } };
    card.securityRequirements = [{ schemes: { bearer: { list: [] } } }];
  }
  return card;
}

export const textPart = (text) => ({ text, mediaType: 'text/plain' });

// agentMessage returns an in-memory agent Message carrying the given wire parts (strings become text parts).
export function agentMessage(taskId, contextId, ...parts) {
  return Message.fromJSON({
    messageId: randomUUID(),
    role: 'ROLE_AGENT',
    taskId,
    contextId,
    parts: parts.map((p) => (typeof p === 'string' ? textPart(p) : p)),
  });
}

// textOf joins the text parts of an in-memory Message.
export function textOf(m) {
  return (m?.parts ?? [])
    .filter((p) => p.content?.$case === 'text')
    .map((p) => p.content.value)
    .join('');
}

const now = () => new Date().toISOString();

// submitted is the first event of a task: the existing task on a follow-up turn, a new SUBMITTED task otherwise.
export function submitted(ctx) {
  if (ctx.task) return AgentEvent.task(ctx.task);
  return AgentEvent.task(
    Task.fromJSON({
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() },
      history: [Message.toJSON(ctx.userMessage)],
    }),
  );
}

// status returns a statusUpdate event; state is a name such as 'TASK_STATE_WORKING', text an optional message.
export function status(taskId, contextId, state, text) {
  return AgentEvent.statusUpdate({
    taskId,
    contextId,
    metadata: undefined,
    status: {
      state: TaskState[state],
      timestamp: now(),
      message: text === undefined ? undefined : agentMessage(taskId, contextId, text),
    },
  });
}

// artifact returns an artifactUpdate event with the given wire parts.
export function artifact(taskId, contextId, { artifactId = randomUUID(), name = 'result', parts, append = false, lastChunk = false }) {
  return AgentEvent.artifactUpdate({
    taskId,
    contextId,
    append,
    lastChunk,
    metadata: undefined,
    artifact: Artifact.fromJSON({ artifactId, name, parts: parts.map((p) => (typeof p === 'string' ? textPart(p) : p)) }),
  });
}

// Runs tracks the executions in flight so that cancelTask can stop them: an execution waits with run.sleep(ms)
// or run.wait() and returns as soon as run.cancelled is true. No timer outlives a cancelled execution.
export class Runs {
  constructor() {
    this.byTask = new Map();
    this.contexts = new Map(); // taskId -> contextId, kept after the run so a late cancel can name the context
  }
  contextOf(taskId) {
    return this.contexts.get(taskId) ?? '';
  }
  start(taskId, contextId) {
    this.contexts.set(taskId, contextId);
    const run = {
      taskId,
      contextId,
      cancelled: false,
      wakers: new Set(),
      sleep(ms) {
        if (run.cancelled) return Promise.resolve();
        return new Promise((resolve) => {
          const waker = () => {
            clearTimeout(timer);
            run.wakers.delete(waker);
            resolve();
          };
          const timer = setTimeout(waker, ms);
          run.wakers.add(waker);
        });
      },
      wait() {
        if (run.cancelled) return Promise.resolve();
        return new Promise((resolve) => run.wakers.add(resolve));
      },
    };
    this.byTask.set(taskId, run);
    return run;
  }
  end(run) {
    if (this.byTask.get(run.taskId) === run) this.byTask.delete(run.taskId);
  }
  // cancel marks the running execution of taskId cancelled and wakes it; it returns the run, if any.
  cancel(taskId) {
    const run = this.byTask.get(taskId);
    if (!run) return undefined;
    run.cancelled = true;
    for (const wake of [...run.wakers]) wake();
    run.wakers.clear();
    return run;
  }
}

// serve starts an agent: listens, builds the card, wires the request handler (Handler, a DefaultRequestHandler
// subclass or the class itself) with the executor, and prints the `listening` line.
// options: { name, description, streaming, skills, executor(stats) => AgentExecutor, Handler? }
export async function serve(options) {
  exitWithParent();
  const { app, stats, token } = createApp();
  const base = await listen(app);
  const compat = process.env.COMPAT === '1';
  const card = wireCard(base, { ...options, compat, token });
  const Base = options.Handler ?? DefaultRequestHandler;
  class Counting extends Base {
    async cancelTask(params, context) {
      stats.cancels++;
      return super.cancelTask(params, context);
    }
  }
  const handler = new Counting(AgentCard.fromJSON(card), new InMemoryTaskStore(), options.executor(stats));
  const legacyCompat = { enabled: compat };
  app.use(`/${AGENT_CARD_PATH}`, sx.agentCardHandler({ agentCardProvider: async () => card, legacyCompat }));
  app.use('/', sx.jsonRpcHandler({ requestHandler: handler, userBuilder: sx.UserBuilder.noAuthentication, legacyCompat }));
  announce(base);
}
