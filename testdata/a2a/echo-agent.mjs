// echo: an A2A v1.0 agent (@a2a-js/sdk 1.3.0) that answers every message with a Message (no task):
// "echo: <user text>". No streaming. Also the JS echo agent of the benchmarks, so it stays minimal.
import { fail } from './common.mjs';
import { serve, AgentEvent, agentMessage, textOf } from './v1.mjs';

serve({
  name: 'echo',
  description: 'Replies to every message with a single agent message "echo: <your text>"; never creates a task.',
  streaming: false,
  skills: [{ id: 'echo', name: 'Echo', description: 'Repeats the text of the message, prefixed with "echo: ".', tags: ['echo', 'test'] }],
  executor: () => ({
    async execute(ctx, bus) {
      bus.publish(AgentEvent.message(agentMessage('', ctx.contextId, `echo: ${textOf(ctx.userMessage)}`)));
    },
    async cancelTask() {},
  }),
}).catch(fail);
