// task: an A2A v1.0 streaming agent (@a2a-js/sdk 1.3.0) that runs every message as a task:
//   SUBMITTED -> (30 ms) WORKING "working on it" -> artifact "result" [text "TURN <n>: <UPPERCASED text>",
//   url https://example.com/docs/<lowercased first word>] -> artifact chunk (append, lastChunk) " (done)" -> COMPLETED.
// n counts the user messages received in the message's contextId (from 1), so a caller that keeps the peer's
// contextId sees TURN 2, 3, ... CancelTask stops a running task with CANCELED.
import { fail } from './common.mjs';
import { serve, submitted, status, artifact, textOf, Runs } from './v1.mjs';

const turns = new Map(); // contextId -> user messages seen
const runs = new Runs();

serve({
  name: 'task',
  description:
    'Runs each message as a task (submitted, working, two artifact chunks, completed). The artifact "result" holds ' +
    '"TURN <n>: <UPPERCASED text>" and a link about the first word; n counts the messages of the context.',
  streaming: true,
  skills: [
    { id: 'shout', name: 'Shout', description: 'Upper-cases the text and numbers the turns of the conversation.', tags: ['task', 'streaming', 'test'] },
    { id: 'docs', name: 'Docs link', description: 'Links a documentation page about the first word of the text.', tags: ['url', 'test'] },
  ],
  executor: (stats) => ({
    async execute(ctx, bus) {
      const { taskId, contextId } = ctx;
      const text = textOf(ctx.userMessage);
      const n = (turns.get(contextId) ?? 0) + 1;
      turns.set(contextId, n);
      const word = text.trim().split(/\s+/)[0] ?? '';
      const run = runs.start(taskId, contextId);
      try {
        bus.publish(submitted(ctx));
        await run.sleep(30);
        if (run.cancelled) return;
        bus.publish(status(taskId, contextId, 'TASK_STATE_WORKING', 'working on it'));
        const artifactId = `result-${taskId}`;
        bus.publish(
          artifact(taskId, contextId, {
            artifactId,
            parts: [
              `TURN ${n}: ${text.toUpperCase()}`,
              { url: `https://example.com/docs/${encodeURIComponent(word.toLowerCase())}`, filename: `Doc about ${word}`, mediaType: 'text/html' },
            ],
          }),
        );
        bus.publish(artifact(taskId, contextId, { artifactId, parts: [' (done)'], append: true, lastChunk: true }));
        bus.publish(status(taskId, contextId, 'TASK_STATE_COMPLETED'));
      } finally {
        runs.end(run);
      }
    },
    async cancelTask(taskId, bus) {
      runs.cancel(taskId);
      stats.canceledTasks++;
      bus.publish(status(taskId, runs.contextOf(taskId), 'TASK_STATE_CANCELED', 'canceled'));
    },
  }),
}).catch(fail);
