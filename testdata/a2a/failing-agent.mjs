// failing: an A2A v1.0 streaming agent (@a2a-js/sdk 1.3.0) whose behaviour is chosen by the trimmed user text:
//   throw  -> the executor throws Error('boom'); the SDK fails the task: "Agent execution error: boom"
//   fail   -> SUBMITTED, then FAILED "fail requested"
//   reject -> SUBMITTED, then REJECTED "reject requested"
//   input  -> SUBMITTED, then INPUT_REQUIRED "Which city?"; the next message on that task (message.taskId set)
//             completes it with artifact text "weather in <text>: sunny"
//   auth   -> SUBMITTED, then AUTH_REQUIRED "sign in first"; the next message on that task completes it with
//             artifact text "signed in: <text>"
//   rpc    -> JSON-RPC error -32004 (UnsupportedOperationError "rpc failure requested"), no task is created
//   hang   -> SUBMITTED, WORKING "still working", then nothing until CancelTask, which ends it with CANCELED
//   slow   -> SUBMITTED, WORKING, 300 ms later artifact "slow done" and COMPLETED
//   other  -> SUBMITTED, artifact "ok: <text>", COMPLETED
import { fail, require } from './common.mjs';
import { serve, submitted, status, artifact, textOf, Runs, DefaultRequestHandler, TaskState } from './v1.mjs';

const { UnsupportedOperationError } = require('@a2a-js/sdk/errors');
const runs = new Runs();
const mode = (message) => textOf(message).trim();

class Failing extends DefaultRequestHandler {
  async sendMessage(params, context) {
    if (mode(params.message) === 'rpc') throw new UnsupportedOperationError('rpc failure requested');
    return super.sendMessage(params, context);
  }
  async *sendMessageStream(params, context) {
    if (mode(params.message) === 'rpc') throw new UnsupportedOperationError('rpc failure requested');
    yield* super.sendMessageStream(params, context);
  }
}

async function execute(ctx, bus) {
  const { taskId, contextId } = ctx;
  const text = mode(ctx.userMessage);
  const state = ctx.task?.status?.state;
  runs.contexts.set(taskId, contextId); // so that a cancel of an interrupted task can name its context
  if (state === TaskState.TASK_STATE_INPUT_REQUIRED || state === TaskState.TASK_STATE_AUTH_REQUIRED) {
    // The answer to an earlier INPUT_REQUIRED / AUTH_REQUIRED on the same task.
    const answer = state === TaskState.TASK_STATE_INPUT_REQUIRED ? `weather in ${text}: sunny` : `signed in: ${text}`;
    bus.publish(submitted(ctx));
    bus.publish(status(taskId, contextId, 'TASK_STATE_WORKING'));
    bus.publish(artifact(taskId, contextId, { parts: [answer], lastChunk: true }));
    bus.publish(status(taskId, contextId, 'TASK_STATE_COMPLETED'));
    return;
  }
  if (text === 'throw') throw new Error('boom');
  bus.publish(submitted(ctx));
  switch (text) {
    case 'fail':
      bus.publish(status(taskId, contextId, 'TASK_STATE_FAILED', 'fail requested'));
      return;
    case 'reject':
      bus.publish(status(taskId, contextId, 'TASK_STATE_REJECTED', 'reject requested'));
      return;
    case 'input':
      bus.publish(status(taskId, contextId, 'TASK_STATE_INPUT_REQUIRED', 'Which city?'));
      return;
    case 'auth':
      bus.publish(status(taskId, contextId, 'TASK_STATE_AUTH_REQUIRED', 'sign in first'));
      return;
    case 'hang':
    case 'slow': {
      const run = runs.start(taskId, contextId);
      try {
        if (text === 'hang') {
          bus.publish(status(taskId, contextId, 'TASK_STATE_WORKING', 'still working'));
          await run.wait(); // until cancelTask wakes it
          return;
        }
        bus.publish(status(taskId, contextId, 'TASK_STATE_WORKING'));
        await run.sleep(300);
        if (run.cancelled) return;
        bus.publish(artifact(taskId, contextId, { parts: ['slow done'], lastChunk: true }));
        bus.publish(status(taskId, contextId, 'TASK_STATE_COMPLETED'));
      } finally {
        runs.end(run);
      }
      return;
    }
    default:
      bus.publish(artifact(taskId, contextId, { parts: [`ok: ${text}`], lastChunk: true }));
      bus.publish(status(taskId, contextId, 'TASK_STATE_COMPLETED'));
  }
}

serve({
  name: 'failing',
  description:
    'Misbehaves on request, chosen by the message text: throw, fail, reject, input, auth, rpc, hang, slow; ' +
    'any other text completes with "ok: <text>".',
  streaming: true,
  skills: [
    { id: 'failures', name: 'Failures', description: 'throw | fail | reject | rpc produce the matching A2A failure.', tags: ['errors', 'test'] },
    { id: 'interrupts', name: 'Interrupts and waits', description: 'input | auth interrupt the task; hang waits for CancelTask; slow takes 300 ms.', tags: ['lifecycle', 'test'] },
  ],
  Handler: Failing,
  executor: (stats) => ({
    execute,
    async cancelTask(taskId, bus) {
      runs.cancel(taskId);
      stats.canceledTasks++;
      bus.publish(status(taskId, runs.contextOf(taskId), 'TASK_STATE_CANCELED', 'canceled'));
    },
  }),
}).catch(fail);
