/**
 * Bypass: `tail -cf FILE` is GNU tail's obsolete "-[N]c f" form (follow
 * forever), not `-c f`. coreutils 9.1 parse_obsolete_option accepts
 * argv[1] = "-cf" whenever there is at most one file operand (or `-- FILE`),
 * because `!p[p[0] == 'c']` is false for "cf". The policy reads it as `-c`
 * with the value "f" and lets it run: the program then never exits on its
 * own (inotify follow) and runs until the command timeout (forever with
 * timeoutMs Infinity), the class the policy refuses for `-f`/`--follow`.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { decideApproval } from '../../../src/policy';

const ctx = { workspace: '/work/ws', cwd: '/work/ws' };

test.each(['tail -cf notes.txt', 'tail -cf -- notes.txt', "tail '-cf' notes.txt"])('%s (obsolete follow form) asks', (command) => {
  expect(decideApproval(command, 'policy', ctx).action).toBe('ask');
});

test('the real tail follows with -cf (so this is not a parse error)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tail-cf-'));
  try {
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'x\n');
    const r = spawnSync('tail', ['-cf', 'notes.txt'], { cwd: dir, timeout: 1500 });
    // killed by the timeout: it was following
    expect(r.signal).toBe('SIGTERM');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
