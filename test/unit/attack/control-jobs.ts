/**
 * What the attack tests of a job left holding bash's control socket share (rounds 8 and 22): a
 * session whose first command leaves the job behind, running one of ./fixtures beside
 * ./fixtures/control_line.py (the stop, the markers and the kill those fixtures share), and the
 * files the job writes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { BashSession } from '../../../src/session';
import { startSession, tempDir } from '../session/helpers';

const FIXTURES = path.join(__dirname, 'fixtures');

/** A session with a job left behind, in its own new folder (`dir`, also its workspace). */
export interface ControlJob {
  dir: string;
  s: BashSession;
  /** The text of a file of `dir`; '' when there is none. */
  read: (file: string) => string;
}

/**
 * Starts a session in a new folder and runs, as its first command, one that leaves fixture
 * `fixture` running as `<name>.py $$ <args>` in the background, with bash's saved stdin (the
 * control socket, fd 12 while a command runs) as its fd 0, `stdout` as its fd 1 (`&10`: bash's
 * saved stdout, the record pipe) and its stderr in `<name>.err`; then waits 1.5 s, the job's own
 * wait (1 s) for the command to end, after which it waits for the next control line.
 * `enterable`: the folder made 0711, as a session without the sandbox's bind needs to enter a
 * folder of root's. Throws (a failed expectation) when the first command does not exit 0.
 */
export async function leaveControlJob(
  fixture: string,
  name: string,
  options: { args?: string; stdout?: string; sandbox?: 'bwrap' | 'none'; enterable?: boolean } = {},
): Promise<ControlJob> {
  const dir = tempDir();
  fs.copyFileSync(path.join(FIXTURES, fixture), path.join(dir, `${name}.py`));
  fs.copyFileSync(path.join(FIXTURES, 'control_line.py'), path.join(dir, 'control_line.py'));
  if (options.enterable) fs.chmodSync(dir, 0o711);
  const s = await startSession({ cwd: dir, workspace: dir, ...(options.sandbox ? { sandbox: options.sandbox } : {}) });
  const args = options.args ? ` ${options.args}` : '';
  const setup = await s.run(`( exec 0<&12 1>${options.stdout ?? '/dev/null'} 2>${name}.err; exec python3 ${name}.py $$${args} ) &`);
  expect(setup.exitCode).toBe(0);
  await new Promise((r) => setTimeout(r, 1500)); // the job waits 1 s, then for the next line
  const read = (file: string): string => (fs.existsSync(path.join(dir, file)) ? fs.readFileSync(path.join(dir, file), 'utf8') : '');
  return { dir, s, read };
}
