/**
 * The session refuses a working directory it cannot honour: one bash
 * would not really be in (the sandbox's private /tmp, a
 * hidden path), or one in the workspace its user cannot write. One clear
 * line, never a silent substitute such as $HOME or /. Real bash, real bwrap.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BashSession, findBwrap, SessionStartError } from '../../../src/session';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

const bwrap = process.getuid?.() === 0 && findBwrap() !== null;
const withBwrap = bwrap ? test : test.skip;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

async function refusal(start: Promise<BashSession>): Promise<string> {
  const err = await start.then(
    async (s) => {
      await s.close();
      return null;
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SessionStartError);
  const message = (err as Error).message;
  expect(message.split('\n')).toHaveLength(1);
  return message;
}

withBwrap('a cwd under /tmp outside the workspace is refused: in the sandbox /tmp is private', async () => {
  const dir = tempDir();
  expect(dir.startsWith('/tmp/')).toBe(true);
  const message = await refusal(BashSession.start({ cwd: dir, sandbox: 'bwrap' }));
  expect(message).toBe(
    `cannot start bash session in ${dir}: it would not be the shell's working directory (the sandbox gives bash a private /tmp); use a directory outside /tmp and the hidden paths`,
  );
});

withBwrap('the same directory as the workspace is bound in: bash is really there and can write it', async () => {
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir, sandbox: 'bwrap' });
  const r = await s.run('pwd; echo hi > here.txt');
  expect(r.output.trim()).toBe(dir);
  expect(fs.readFileSync(path.join(dir, 'here.txt'), 'utf8')).toBe('hi\n');
});

withBwrap('a cwd under a hidden path (not the workspace) is refused, naming the path', async () => {
  const hidden = tempDir();
  const ws = path.join(hidden, 'ws');
  const other = path.join(hidden, 'other');
  fs.mkdirSync(ws);
  fs.mkdirSync(other);
  const message = await refusal(BashSession.start({ cwd: other, workspace: ws, hidePaths: [hidden], sandbox: 'bwrap' }));
  expect(message).toContain(
    `it would not be the shell's working directory (the sandbox hides ${hidden}); use a directory inside the workspace ${ws}`,
  );
});

test('a workspace its user cannot write is refused, sandbox or not', async () => {
  const ws = tempDir();
  fs.chmodSync(ws, 0o555);
  for (const sandbox of bwrap ? (['none', 'bwrap'] as const) : (['none'] as const)) {
    const message = await refusal(BashSession.start({ cwd: ws, workspace: ws, sandbox }));
    expect(message).toMatch(
      new RegExp(`^cannot start bash session in ${ws}: the workspace must be writable, but \\S+ cannot write ${ws} \\(`),
    );
  }
});
