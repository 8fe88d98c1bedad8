/**
 * CLI entry (`agent-jobs`): start runs, approve or deny commands, watch,
 * list and cancel them, and run the worker, the dev server and the
 * scripted model server. `agent-jobs --help` lists the commands.
 */
import { buildProgram } from './program';
import { reportError } from './errors';

export async function main(argv: string[] = process.argv): Promise<void> {
  // A reader that goes away (`agent-jobs watch ID | head`) is not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    reportError(err);
  }
}

if (require.main === module) void main();
