import type Anthropic from '@anthropic-ai/sdk';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createClaudeActivities } from '../../../src/activities/claude';
import { applyDelta, emptyConversation, type Conversation } from '../../../src/contract';
import { ConversationLog } from '../../../src/workflows/conversation';

test('callClaude heartbeats while it rebuilds the conversation from history, before the stream starts', async () => {
  const log = new ConversationLog('task');
  log.takeDelta();
  log.push({ role: 'assistant', content: [{ type: 'text', text: 'hi' }] });
  log.push({ role: 'user', content: 'more' });
  const delta = log.takeDelta();
  let heartbeats = 0;
  let heartbeatsDuringRead = 0;
  const readHistory = async (): Promise<Conversation> => {
    // A rebuild that lasts until two heartbeats came (at most 10 s): a fixed 2.5 s could end first when a loaded machine delays the interval.
    const end = Date.now() + 10_000;
    while (heartbeats < 2 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 50));
    heartbeatsDuringRead = heartbeats;
    const c = emptyConversation();
    applyDelta(c, new ConversationLog('task').takeDelta());
    return c;
  };
  const anthropic = {
    messages: {
      stream: () => {
        throw new Error('stop here');
      },
    },
  } as unknown as Anthropic;
  const activities = createClaudeActivities(anthropic, { readHistory });
  const env = new MockActivityEnvironment({ workflowExecution: { workflowId: 'w', runId: 'r' }, activityId: '2' });
  env.on('heartbeat', () => heartbeats++);
  await expect(
    env.run((i: Parameters<typeof activities.callClaude>[0]) => activities.callClaude(i), {
      model: 'm',
      maxTokens: 10,
      transcript: delta,
      turn: 2,
    }),
  ).rejects.toThrow();
  expect(heartbeatsDuringRead).toBeGreaterThanOrEqual(2);
});
