/**
 * The attacker's next tries against the fixes of adversary round 22's kinds 3 and 6
 * (adversary-round22.test.ts): the text editor's helper bounded as an exact run (edit-io.ts),
 * an exact run stopped when it opens or holds a FIFO swapped in after its check (exact.ts
 * `blockerInUse`), and the machine-wide files of `/proc` covered in every sandbox (sandbox.ts
 * `PROC_MASKED`). Real sessions of the unit harness, as root (the worker setting).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TEXT_EDITOR_NAME } from '../../../src/contract/text-editor';
import type { EditRequest } from '../../../src/contract/text-editor';
import { decideApproval } from '../../../src/policy';
import { BashSession, ExactRefusedError } from '../../../src/session';
import { EDIT_HELPER_SOURCE, MAX_EDIT_FILE_BYTES, MAX_VIEW_ENTRIES } from '../../../src/session/edit';
import { launchStdio } from '../../../src/session/fds';
import { PROC_MASKED, sandboxedSpawnArgs } from '../../../src/session/sandbox';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

function needRoot(): void {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
}

/** One editor command, every gate answer `apply`; a thrown error is returned as its message with `thrown: true`. */
async function edit(s: BashSession, e: EditRequest, maxCharacters = 1000): Promise<{ text: string; isError: boolean; thrown: boolean }> {
  try {
    const o = await s.edit(e, () => ({ apply: true }), { maxCharacters, ruleSubject: (c, a) => `${TEXT_EDITOR_NAME} ${c} ${a}` });
    return { text: o.text, isError: o.isError, thrown: false };
  } catch (err) {
    return { text: (err as Error).message, isError: true, thrown: true };
  }
}

/** Starts `python3 <script>` in the session as a background job; its stderr goes to `<name>.err`. */
async function job(s: BashSession, dir: string, name: string, lines: string[]): Promise<void> {
  fs.writeFileSync(path.join(dir, `${name}.py`), [...lines, ''].join('\n'));
  expect((await s.run(`( exec python3 ${name}.py ) >/dev/null 2>${name}.err &`)).exitCode).toBe(0);
}

describe("kind 3: the editor's helper is bounded as an exact run", () => {
  /** Pids of the worker's (this process's) descendants. */
  function descendants(): number[] {
    const out: number[] = [];
    const todo = [process.pid];
    while (todo.length > 0) {
      const p = todo.shift()!;
      if (p !== process.pid) out.push(p);
      try {
        for (const t of fs.readdirSync(`/proc/${p}/task`))
          for (const c of fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ')) if (c.trim()) todo.push(Number(c));
      } catch {
        /* gone */
      }
    }
    return out;
  }

  test("the helper runs with the shell's OOM score, ulimits, pids and memory cgroups", async () => {
    needRoot();
    const ws = tempDir();
    fs.writeFileSync(path.join(ws, 'big.txt'), `${'y'.repeat(100)}\n`.repeat(60_000)); // 6 MiB: the helper lives a while
    const s = await startSession({
      cwd: ws,
      workspace: ws,
      limits: { maxMemoryBytes: 12 * 1024 ** 3, maxOpenFiles: 300, maxSessionMemoryBytes: 512 * 1024 ** 2 },
    });
    const lines = (pid: number): string[] => fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
    const shellGroups = lines(s.bashPid).filter((l) => /:(pids|memory)(,|:)/.test(l));
    expect(shellGroups.length).toBeGreaterThan(0);
    let seen: { oom: string; limits: string; groups: string[] } | undefined;
    let stop = false;
    const watcher = (async () => {
      while (!stop && !seen) {
        for (const p of descendants()) {
          try {
            if (fs.readlinkSync(`/proc/${p}/exe`) !== process.execPath) continue;
            if (!fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(EDIT_HELPER_SOURCE.slice(0, 100))) continue;
            seen = {
              oom: fs.readFileSync(`/proc/${p}/oom_score_adj`, 'utf8').trim(),
              limits: fs.readFileSync(`/proc/${p}/limits`, 'utf8'),
              groups: lines(p),
            };
          } catch {
            /* gone, or not ours */
          }
        }
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    for (let i = 0; i < 30 && !seen; i++) expect((await edit(s, { command: 'view', path: 'big.txt' })).isError).toBe(false);
    stop = true;
    await watcher;
    expect(seen).toBeDefined();
    expect(seen!.oom).toBe('1000');
    expect(seen!.limits).toMatch(/Max address space\s+12884901888\s+12884901888/);
    expect(seen!.limits).toMatch(/Max open files\s+300\s+300/);
    expect(seen!.limits).toMatch(/Max core file size\s+0\s+0/);
    for (const g of shellGroups) expect(seen!.groups).toContain(g);
  });

  test('a view of a folder of 30,000 small files, and of a tree 300 folders wide, reads a bounded part and says so', async () => {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000 });
    const made = await s.run(
      `python3 -c "
import os
os.mkdir('flat'); os.mkdir('tree')
for i in range(30000): open('flat/%s%05d' % ('f' * 100, 29999 - i), 'w').close()
for d in range(300):
    os.mkdir('tree/a%03d' % d)
    for f in range(100): open('tree/a%03d/f%03d' % (d, f), 'w').close()
print('made')"`,
      { timeoutMs: 120_000 },
    );
    expect(made.output).toContain('made');
    const flat = await edit(s, { command: 'view', path: 'flat' }, 10_000_000);
    expect(flat.isError).toBe(false);
    expect(flat.text).toContain('listing cut');
    const names = flat.text.split('\n').filter((l) => l.startsWith('f'));
    expect(names.length).toBe(MAX_VIEW_ENTRIES);
    expect([...names].sort()).toEqual(names); // sorted among what was read
    const tree = await edit(s, { command: 'view', path: 'tree' }, 10_000_000);
    expect(tree.isError).toBe(false);
    expect(tree.text).toContain('listing cut');
    const entries = tree.text.split('\n').filter((l) => l.startsWith('a'));
    expect(entries.slice(0, 3)).toEqual(['a000/', 'a000/f000', 'a000/f001']);
    expect(entries.length).toBe(MAX_VIEW_ENTRIES);
  });

  test('a single line of the largest size is shown cut; one byte more is refused; neither is read whole past the bound', async () => {
    const ws = tempDir();
    fs.writeFileSync(path.join(ws, 'line.txt'), 'z'.repeat(MAX_EDIT_FILE_BYTES));
    fs.writeFileSync(path.join(ws, 'over.txt'), 'z'.repeat(MAX_EDIT_FILE_BYTES + 1));
    const s = await startSession({ cwd: ws, workspace: ws });
    const v = await edit(s, { command: 'view', path: 'line.txt' });
    expect(v.isError).toBe(false);
    expect(v.text.startsWith(`1: ${'z'.repeat(100)}`)).toBe(true);
    expect(v.text).toContain('[truncated');
    const over = await edit(s, { command: 'view', path: 'over.txt' });
    expect(over.isError).toBe(true);
    expect(over.text).toContain(`handles files up to ${MAX_EDIT_FILE_BYTES} bytes`);
  });

  test('a FIFO at the path is refused at once, for a view and for a change', async () => {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    expect((await s.run('mkfifo p')).exitCode).toBe(0);
    const started = Date.now();
    const v = await edit(s, { command: 'view', path: 'p' });
    const c = await edit(s, { command: 'str_replace', path: 'p', oldStr: 'a', newStr: 'b' });
    const w = await edit(s, { command: 'create', path: 'p', fileText: 'new' });
    expect(v).toMatchObject({ isError: true, thrown: false });
    expect(v.text).toContain('not a regular file');
    expect(c.text).toContain('not a regular file');
    expect(w.isError).toBe(true);
    expect(Date.now() - started).toBeLessThan(20_000); // the helper's own time limit is 30 s each
    expect(fs.statSync(path.join(ws, 'p')).isFIFO()).toBe(true);
  });

  test('a job swapping the path between a file and a FIFO (with a writer holding it, or none) never makes a view hang', async () => {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    await job(s, ws, 'swap', [
      'import os, time',
      'i = 0',
      'while True:',
      "    open('p.tmp', 'w').write('x')",
      "    os.rename('p.tmp', 'p')",
      '    time.sleep(0.01)',
      "    os.mkfifo('q.tmp')",
      '    held = os.open("q.tmp", os.O_RDWR) if i % 2 else None',
      "    os.rename('q.tmp', 'p')",
      '    time.sleep(0.01)',
      '    if held is not None: os.close(held)',
      '    i += 1',
    ]);
    for (let i = 0; i < 20; i++) {
      const started = Date.now();
      const v = await edit(s, { command: 'view', path: 'p' });
      expect(v.thrown).toBe(false);
      if (v.isError) expect(v.text).toMatch(/not a regular file|File not found/);
      else expect(v.text).toBe('1: x');
      expect(Date.now() - started).toBeLessThan(15_000);
    }
    expect(fs.readFileSync(path.join(ws, 'swap.err'), 'utf8')).toBe('');
  });

  test('a job swapping the path for a symlink out of the workspace never shows what it points to', async () => {
    const outside = '/usr/lib/os-release';
    const secret = fs.readFileSync(outside, 'utf8').split('\n')[0]!;
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    await job(s, ws, 'swap', [
      'import os, time',
      'while True:',
      "    open('f.tmp', 'w').write('inside\\n')",
      "    os.rename('f.tmp', 'f')",
      '    time.sleep(0.005)',
      `    os.symlink('${outside}', 'l.tmp')`,
      "    os.rename('l.tmp', 'f')",
      '    time.sleep(0.005)',
    ]);
    const outcomes = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const v = await edit(s, { command: 'view', path: 'f' });
      expect(v.text).not.toContain(secret);
      outcomes.add(v.isError ? 'refused' : 'shown');
    }
    expect(fs.readFileSync(path.join(ws, 'swap.err'), 'utf8')).toBe('');
    expect(outcomes.has('refused')).toBe(true); // the symlink was seen at least once
  });

  test('a view that needs more memory than the session has is an error of that edit; the session and another one go on', async () => {
    needRoot();
    const ws = tempDir();
    fs.writeFileSync(path.join(ws, 'big.txt'), 'q'.repeat(MAX_EDIT_FILE_BYTES - 1024));
    const s = await startSession({ cwd: ws, workspace: ws, limits: { maxSessionMemoryBytes: 16 * 1024 ** 2 } });
    const other = tempDir();
    const s2 = await startSession({ cwd: other, workspace: other });
    const v = await edit(s, { command: 'view', path: 'big.txt' });
    expect(v).toMatchObject({ isError: true, thrown: false });
    expect(v.text).toMatch(/could not be read: the edit helper ended \((exit 137|SIGKILL)\)[\s\S]*session's limits/);
    expect(v.text).toContain('[agent-jobs: the session reached its memory limit (16777216 bytes');
    expect((await s.run('echo still here')).output).toContain('still here');
    expect((await s2.run('echo other')).output).toContain('other');
  });
});

describe('kind 3: an exact run stopped when a path is a FIFO at open time', () => {
  /**
   * Runs `command` unasked, 13 ms apart, until `want` runs were stopped on a FIFO: 60 times, and on up to 300 while the
   * job has won no race (a fresh-clone run saw 60 end with every path checked at a file, so the watch went untried).
   */
  async function race(s: BashSession, command: string, want = 2): Promise<string[]> {
    const d = decideApproval(command, 'policy', { workspace: s.exactRoot, cwd: s.cwd });
    expect(d.action).toBe('run');
    if (d.action !== 'run') return [];
    const outcomes: string[] = [];
    for (let i = 0; ; i++) {
      const stopped = outcomes.filter((o) => o === 'stopped').length;
      if (stopped >= want || i >= (stopped === 0 ? 300 : 60)) break;
      await new Promise((r) => setTimeout(r, 13));
      const r = await s.runExact(d.argv, { paths: d.paths, timeoutMs: 5000 }).catch((err: unknown) => {
        expect(err).toBeInstanceOf(ExactRefusedError);
        return undefined;
      });
      if (r === undefined) outcomes.push('refused');
      else if (r.timedOut) outcomes.push('timed out');
      else if (r.output.includes('a program run unasked never reads a FIFO')) {
        expect(r.exitCode).toBeNull();
        expect(r.durationMs).toBeLessThan(4000);
        outcomes.push('stopped');
      } else outcomes.push('returned');
    }
    return outcomes;
  }

  const swapper = (writer: 'none' | 'held' | 'feeding'): string[] => [
    'import os, time, threading',
    'def feed(fd):',
    '    try:',
    '        while True: os.write(fd, b"."); time.sleep(0.005)',
    '    except OSError: pass',
    'while True:',
    "    open('p.tmp', 'w').write('x')",
    "    os.rename('p.tmp', 'p')",
    '    time.sleep(0.02)',
    "    os.mkfifo('q.tmp')",
    `    fd = os.open('q.tmp', os.O_RDWR) if '${writer}' != 'none' else None`,
    `    if '${writer}' == 'feeding': threading.Thread(target=feed, args=(fd,), daemon=True).start()`,
    "    os.rename('q.tmp', 'p')",
    '    time.sleep(0.02)',
  ];

  test.each([
    { writer: 'none' as const, command: 'cat a p' },
    { writer: 'held' as const, command: 'cat p' },
    { writer: 'feeding' as const, command: 'head -c 100000 p' },
    { writer: 'held' as const, command: 'wc -c a p' },
  ])('writer $writer, `$command`: stopped within a tick, never run to its timeout', async ({ writer, command }) => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'a'), 'aaa\n');
    const s = await startSession({ cwd: dir, workspace: dir });
    await job(s, dir, 'swap', swapper(writer));
    const outcomes = await race(s, command);
    expect(fs.readFileSync(path.join(dir, 'swap.err'), 'utf8')).toBe('');
    expect(outcomes).not.toContain('timed out');
    expect(outcomes).toContain('stopped'); // the race was won by the job, and the watch caught it
  });

  test('a regular file and a directory are read as before (no false stop)', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'a'), 'aaa\n');
    fs.mkdirSync(path.join(dir, 'sub'));
    const s = await startSession({ cwd: dir, workspace: dir });
    const d = decideApproval('grep -r aaa .', 'policy', { workspace: s.exactRoot, cwd: s.cwd });
    expect(d.action).toBe('run');
    if (d.action !== 'run') return;
    const r = await s.runExact(d.argv, { paths: d.paths });
    expect(r.exitCode).toBe(0);
    expect(r.output).toContain('./a:aaa');
  });
});

describe("kind 6: the kernel's machine-wide /proc files are covered in every sandbox", () => {
  const present = PROC_MASKED.filter((f) => fs.existsSync(f));

  test('bash reads nothing from them, nor through /proc/self/root or /proc/1/root', async () => {
    expect(present).toContain('/proc/keys');
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    for (const f of present) {
      for (const via of [f, `/proc/self/root${f}`, `/proc/1/root${f}`, `/proc/thread-self/root${f}`]) {
        const r = await s.run(`head -c 4096 ${via} 2>/dev/null | wc -c`);
        expect(`${via}: ${r.output.trim()}`).toBe(`${via}: 0`);
      }
    }
  });

  test("an exact run's and the editor helper's sandboxes cover them too (a fresh bwrap each)", async () => {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    const launch = sandboxedSpawnArgs(s.sandboxOptions, ['/bin/sh', '-c', `cat ${present.join(' ')} 2>/dev/null | wc -c`], ws);
    const out = await new Promise<string>((resolve) => {
      const c = spawn(launch.file, launch.args, {
        cwd: ws,
        env: { PATH: '/usr/bin:/bin' },
        stdio: launchStdio(launch, ['ignore', 'pipe', 'ignore']),
      });
      let text = '';
      c.stdout!.on('data', (d: Buffer) => (text += String(d)));
      c.on('close', () => resolve(text));
    });
    expect(out.trim()).toBe('0');
    // The helper's sandbox is built by the same function; an editor view of a symlink to /proc/keys is refused as outside.
    fs.symlinkSync('/proc/keys', path.join(ws, 'k'));
    const v = await edit(s, { command: 'view', path: 'k' });
    expect(v.isError).toBe(true);
  });
});
