/**
 * Round 3, kind 3: an auto-approved program (an exact run, src/session/exact.ts)
 * had none of the session's limits: a regular expression in `grep` (on the
 * policy's allowlist, src/policy/programs.ts) grew memory without bound, and the
 * kernel's OOM killer then took every run's shell. Held by limits.ts
 * `limitedArgv` (the shell's ulimit values and OOM score through prlimit and
 * choom) and by the exact run joining the shell's pids cgroup (session.ts
 * runExactNow).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const MiB = 1024 * 1024;

test('grep with a pattern that grows memory without bound is stopped at the memory limit and reported; another session shell lives on', async () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'input.txt'), 'a'.repeat(64) + '\n');
  const other = await startSession({ cwd: tempDir() });
  const otherBash = other.bashPid;
  const s = await startSession({ cwd: dir, workspace: dir, limits: { maxMemoryBytes: 256 * MiB } });
  // `a{1,32000}` makes GNU grep 3.8 build an automaton that takes all the memory it is given (about 1 GB in 1 s at 1 GB).
  const r = await s.runExact(['grep', '-E', 'a{1,32000}', 'input.txt'], { paths: ['input.txt'] });
  expect(r.exitCode).toBe(2);
  expect(r.output).toMatch(/grep: memory exhausted/i);
  expect(r.output).toMatch(/ran out of memory under the session's memory limit \(268435456 bytes/);
  expect(r.timedOut).toBe(false);
  // Not fatal to anyone: this session's shell and the other session's shell both still run.
  expect((await s.run('echo mine')).output).toBe('mine\n');
  expect((await other.run('echo other')).output).toBe('other\n');
  expect(other.bashPid).toBe(otherBash);
});

test("an exact run has the shell's limits: address space, file size, core, open files, CPU (soft = hard), OOM score, and the shell's pids cgroup", async () => {
  const dir = tempDir();
  const s = await startSession({
    cwd: dir,
    workspace: dir,
    limits: { maxMemoryBytes: 512 * MiB, maxFileSizeBytes: 4 * MiB, maxOpenFiles: 64, maxCpuSeconds: 3 },
  });
  const limits = (await s.runExact(['cat', '/proc/self/limits'])).output;
  const row = (name: string): string =>
    limits
      .split('\n')
      .find((l) => l.startsWith(name))!
      .replace(/\s+/g, ' ')
      .trim();
  expect(row('Max address space')).toBe(`Max address space ${512 * MiB} ${512 * MiB} bytes`);
  expect(row('Max file size')).toBe(`Max file size ${4 * MiB} ${4 * MiB} bytes`);
  expect(row('Max core file size')).toBe('Max core file size 0 0 bytes');
  expect(row('Max open files')).toBe('Max open files 64 64 files');
  expect(row('Max cpu time')).toBe('Max cpu time 3 3 seconds');
  expect((await s.runExact(['cat', '/proc/self/oom_score_adj'])).output).toBe('1000\n');
  if (s.guardKind === 'cgroup') {
    // Seen from the worker: while it runs, the program is a member of the shell's pids cgroup (named after the session).
    const base = '/sys/fs/cgroup/pids';
    const dir = fs.readdirSync(base).find((d) => d.includes(s.id));
    expect(dir).toBeDefined();
    const running = s.runExact(['sleep', '1.5']);
    let member = false;
    for (let i = 0; i < 100 && !member; i++) {
      await new Promise((r) => setTimeout(r, 10));
      const pids = fs
        .readFileSync(path.join(base, dir!, 'cgroup.procs'), 'utf8')
        .split('\n')
        .filter(Boolean);
      member = pids.some((p) => {
        try {
          return fs.readFileSync(`/proc/${p}/comm`, 'utf8') === 'sleep\n';
        } catch {
          return false;
        }
      });
    }
    await running;
    expect(member).toBe(true);
  }
  // The shell has the same values.
  expect((await s.run("grep -E '^Max (address space|file size|open files|cpu time)' /proc/self/limits | tr -s ' '")).output).toBe(
    [
      `Max cpu time 3 3 seconds`,
      `Max file size ${4 * MiB} ${4 * MiB} bytes`,
      'Max open files 64 64 files',
      `Max address space ${512 * MiB} ${512 * MiB} bytes`,
    ]
      .map((l) => `${l} \n`)
      .join(''),
  );
});

test('an exact run that writes past the file size limit is killed by SIGXFSZ and reported', async () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'big.txt'), 'x'.repeat(200_000));
  const s = await startSession({ cwd: dir, workspace: dir, limits: { maxFileSizeBytes: 64 * 1024 } });
  // `sort -o` writes a file; the policy never auto-approves it, but the session must bound it all the same.
  const r = await s.runExact(['sort', '-o', 'out.txt', 'big.txt'], { paths: ['big.txt', 'out.txt'] });
  expect(r.exitCode).toBe(153); // 128 + SIGXFSZ, as the shell reports it
  expect(r.output).toMatch(/wrote past the session's file size limit \(65536 bytes\)/);
});
