/** agent-jobs from code (docs/client.md): start a run, approve each of its commands, await the result. Needs a worker. */
import { connect } from '../src/client';

export async function main(task = 'write hello into hello.txt'): Promise<string> {
  // Temporal's envconfig: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_PROFILE, TEMPORAL_API_KEY, TLS.
  const jobs = await connect();
  try {
    const run = await jobs.start({ task, approval: 'always' });
    // Each command the run waits on, until it waits no more (a real program decides; this one approves all).
    for (let pending = await run.waitForApproval(); pending; pending = await run.waitForApproval()) {
      // Bound to the exact bytes shown: the run refuses it if the pending command changed.
      const { answer } = await run.approve({ sha: pending.commandSha256, by: 'from-code' });
      console.log(`${answer.decision}: ${answer.command}`);
    }
    const result = await run.result();
    console.log(`${run.workflowId}: ${result.status}${result.text ? `: ${result.text}` : ''}`);
    return result.status;
  } finally {
    await jobs.close();
  }
}

if (require.main === module) void main();
