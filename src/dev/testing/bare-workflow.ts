/**
 * The bare floor's workflow, for `npm run bench:turns`: each turn one no-op
 * activity on the workflow's own task queue (eagerly started by the worker
 * that ran the workflow task, like `callClaude`), then one on a second task
 * queue polled by the same worker process (like `runCommand` on the session
 * queue). Nothing else: what a turn takes here is Temporal's own cost.
 * Deterministic (workflow code).
 */
import { proxyActivities } from '@temporalio/workflow';

/** The activity both queues run: returns at once. */
export interface BareActivities {
  noop(): Promise<void>;
}

/**
 * Runs `turns` bare turns.
 * @param turns how many (each two activities)
 * @param secondQueue the second task queue (a worker of the same process polls it)
 */
export async function bareTurns(turns: number, secondQueue: string): Promise<void> {
  const shared = proxyActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });
  const second = proxyActivities<BareActivities>({ startToCloseTimeout: '30 seconds', taskQueue: secondQueue });
  for (let i = 0; i < turns; i++) {
    await shared.noop();
    await second.noop();
  }
}
