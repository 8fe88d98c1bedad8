/** Per-command plumbing: a connected agent-jobs client (src/client.ts), closed when the command ends. */
import { connect, type AgentJobsClient } from '../client';
import { updateTimeoutMs } from '../settings';

/**
 * Runs `fn` with a client connected with Temporal's envconfig and closes the
 * connection afterwards. Updates wait `AGENT_JOBS_UPDATE_TIMEOUT` for the
 * run's answer (src/settings.ts).
 * @throws TemporalUnreachableError when no server answers
 */
export async function withClient<T>(fn: (jobs: AgentJobsClient) => Promise<T>): Promise<T> {
  const jobs = await connect({ updateTimeoutMs: updateTimeoutMs() });
  try {
    return await fn(jobs);
  } finally {
    await jobs.close();
  }
}
