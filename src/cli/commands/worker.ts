/** `agent-jobs worker`: runs a worker process (the same as `node dist/worker.js`). */
import type { Command } from 'commander';
import { installRuntime, startWorker } from '../../worker';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker: the agentRun workflow, Claude calls, and this machine\'s bash sessions (Ctrl-C stops it)')
    .action(async () => {
      installRuntime();
      const worker = await startWorker();
      await worker.done;
    });
}
