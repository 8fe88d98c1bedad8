/**
 * Without the sandbox (`AGENT_JOBS_SANDBOX=none`), the session's seccomp filter still holds: every
 * launch (the shell, exact runs, the editor's helper) is started by a python3 launcher that loads
 * the same program bwrap loads (src/session/seccomp-launch.ts, sandbox.ts `launchArgs`). As root,
 * in real mode-`none` sessions (bash runs as the session user). Each attack is also run on a session
 * whose host has no usable python3 (so no filter), where it must work: that is what shows the filter,
 * not something else, refuses it.
 *
 * The attacks: round 22's kind 7 (a job holding bash's saved stdin peeks at the next control line
 * with `recv(MSG_PEEK)`, learns the tokens and forges status 0); `pidfd_getfd`, `ptrace`,
 * `process_vm_*` and gdb on a dumpable process of the session, and on one of another session of the
 * same user that holds its control socket; the kernel's keyrings. Against the launcher itself: a
 * python3 earlier on `PATH`, `PYTHON*` variables in the launch's environment, Python modules planted
 * in the workspace (the launch's cwd) before a restart, the program file rewritten, removed or
 * swapped for another on fd 3. And the cost: a normal session still runs commands, jobs, exact runs
 * and the editor, with the same environment and signal dispositions as without the launcher.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SessionHost, type BashSession, type SandboxOptions } from '../../../src/session';
import { editRuleSubject, parseEditInput } from '../../../src/contract/text-editor';
import { launchArgs } from '../../../src/session/sandbox';
import { filterSha256, findSeccompLauncher, seccompLauncherNote, SECCOMP_LAUNCHER_PYTHONS } from '../../../src/session/seccomp-launch';
import { writeSeccompFilter } from '../../../src/session/seccomp';
import { encodeFilter, BPF_RET_K, SECCOMP_RET_ALLOW } from '../../../src/session/bpf';
import { closeSessions, removeTempDirs, startSession, tempDir, waitUntil } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** A host whose mode-`none` sessions run without the filter (no python3 it may use), for the control runs. */
function unfilteredHost(): SessionHost {
  const host = new SessionHost({ pythons: ['/nonexistent/python3'] });
  host.seccompLauncher(false);
  return host;
}

/** A workspace the session user can enter (without the sandbox's bind it needs the search bit). */
function workspace(): string {
  const dir = tempDir();
  fs.chmodSync(dir, 0o711);
  return dir;
}

async function noneSession(dir: string, extra: Parameters<typeof startSession>[0] = {}): Promise<BashSession> {
  return startSession({ cwd: dir, workspace: dir, sandbox: 'none', ...extra });
}

/** The probe of reach-into-bash.test.ts, compiled into `dir`. */
function probe(dir: string): string {
  const out = path.join(dir, 'reach');
  execFileSync('cc', ['-O', '-o', out, path.join(__dirname, 'fixtures', 'reach-into-bash.c')]);
  fs.chmodSync(out, 0o755);
  return out;
}

/** Puts round 22's forging job (and the helper module it imports, where the fixtures have one) into `dir`. */
function copyForge(dir: string): void {
  fs.copyFileSync(path.join(__dirname, 'fixtures', 'forge-trimmed-status.py'), path.join(dir, 'forge.py'));
  const helper = path.join(__dirname, 'fixtures', 'control_line.py');
  if (fs.existsSync(helper)) fs.copyFileSync(helper, path.join(dir, 'control_line.py'));
}

/** Waits until the job of the kind 7 fixture has stopped bash (SIGSTOP): it then waits for the next control line. */
async function stoppedByJob(s: BashSession): Promise<void> {
  const state = (): string => fs.readFileSync(`/proc/${s.bashPid}/stat`, 'utf8').split(') ')[1]!.split(' ')[0]!;
  await waitUntil('the job to stop bash', () => state() === 'T');
}

/**
 * Starts a job `sleep 300` and waits in the command until it has exec'd (its pid in `$p`): only then is it dumpable, so
 * a refusal is the filter's, not the kernel's for a subshell of the sealed bash.
 */
const SLEEPER = 'sleep 300 & p=$!; until [ "$(cat /proc/$p/comm)" = sleep ]; do :; done';

const REACH = ['pidfd_getfd', 'process_vm_readv', 'process_vm_writev', 'kcmp', 'process_madvise', 'ptrace_seize', 'ptrace_attach'];

test('this suite runs as root with a python3 the launcher may use, so the sessions below are filtered', () => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  expect(findSeccompLauncher()).toEqual({ python: SECCOMP_LAUNCHER_PYTHONS[0] });
});

describe("round 22's kind 7: a job peeks at the control line of a mode-none session", () => {
  test('the peek gets EPERM, nothing is forged, and `(exit 7)` reports 7', async () => {
    const dir = workspace();
    copyForge(dir);
    const s = await noneSession(dir);
    expect((await s.run('( exec 0<&12 1>&10 2>forge.err; exec python3 forge.py $$ ) &')).exitCode).toBe(0);
    await stoppedByJob(s);
    const r = await s.run('sleep 2; echo second; (exit 7)');
    const read = (f: string): string => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), 'utf8') : '');
    await waitUntil('the job to end', () => /PermissionError/.test(read('forge.err')));
    expect(read('forge.err')).toMatch(/MSG_PEEK[\s\S]*PermissionError: \[Errno 1\] Operation not permitted/);
    expect(read('forge.log')).not.toContain('wrote');
    expect(r).toMatchObject({ exitCode: 7, output: 'second\n' });
    expect((await s.run('echo "status was $?"')).output).toBe('status was 7\n');
  });

  test('control: on a host without the launcher the same job peeks (so the filter is what refuses it)', async () => {
    const dir = workspace();
    copyForge(dir);
    const s = await noneSession(dir, { host: unfilteredHost() });
    await s.run('( exec 0<&12 1>&10 2>forge.err; exec python3 forge.py $$ ) &');
    await stoppedByJob(s);
    await s.run('sleep 2; echo second; (exit 7)');
    await waitUntil(
      'the job to peek',
      () => fs.existsSync(path.join(dir, 'forge.log')) && /peeked/.test(fs.readFileSync(path.join(dir, 'forge.log'), 'utf8')),
    );
  });
});

describe('reaching into a process of the session, or of another session of the same user', () => {
  test('pidfd_getfd, process_vm_*, kcmp, process_madvise, ptrace on a dumpable job of the session: EPERM', async () => {
    const dir = workspace();
    const reach = probe(dir);
    const s = await noneSession(dir);
    // `sleep` is exec'd, so dumpable (bash is not: sealShell); of the session user, as the probe.
    const r = await s.run(`${SLEEPER}; ${reach} probe $p; kill $p; grep -E '^(Seccomp|NoNewPrivs):' /proc/$$/status`);
    for (const name of REACH) expect(r.output).toContain(`${name} EPERM\n`);
    expect(r.output).toMatch(/^NoNewPrivs:\t1$/m);
    expect(r.output).toMatch(/^Seccomp:\t2$/m);
  });

  test('control: without the launcher the same probe reaches the job', async () => {
    const dir = workspace();
    const reach = probe(dir);
    const s = await noneSession(dir, { host: unfilteredHost() });
    const r = await s.run(`${SLEEPER}; ${reach} probe $p; kill $p; grep '^Seccomp:' /proc/$$/status`);
    expect(r.output).toContain('pidfd_getfd ok\n');
    expect(r.output).toContain('kcmp ok\n');
    expect(r.output).toContain('ptrace_seize ok\n');
    expect(r.output).toMatch(/^Seccomp:\t0$/m);
  });

  test("another session's job holding its control socket: pidfd_getfd refused, so its next command is not read", async () => {
    const a = workspace();
    const b = workspace();
    const reach = probe(b);
    // In mode none every root-owned workspace's bash is the same user: B's job reaches A's processes.
    const sa = await noneSession(a);
    const sb = await noneSession(b);
    await sa.run(`( exec 0<&12 1>/dev/null 2>&1; exec sleep 300 ) & echo $! > ${b}/victim`);
    const victim = fs.readFileSync(path.join(b, 'victim'), 'utf8').trim();
    // Once it has exec'd sleep it is dumpable (the subshell before, forked from bash, is not: sealShell).
    await waitUntil('the victim to exec sleep', () => fs.readFileSync(`/proc/${victim}/comm`, 'utf8') === 'sleep\n');
    const steal = sb.run(`timeout 10 ${reach} steal ${victim}`);
    const next = await sa.run('echo secret-command; (exit 5)');
    expect(next).toMatchObject({ exitCode: 5, output: 'secret-command\n' });
    const stolen = await steal;
    expect(stolen.output).toBe('pidfd_getfd EPERM\n');
  });

  test('gdb cannot attach to a job of the session', async () => {
    const dir = workspace();
    const s = await noneSession(dir);
    const r = await s.run(`${SLEEPER}; gdb -batch -p $p -ex 'call (int)write(1, "PWNED\\n", 6)' 2>&1 </dev/null; kill $p; echo gdb done`);
    expect(r.output).toMatch(/ptrace: Operation not permitted/);
    expect(r.output).not.toContain('PWNED');
  });
});

describe("the kernel's keyrings", () => {
  const keyring = (dir: string): void => fs.copyFileSync(path.join(__dirname, 'fixtures', 'user-keyring.py'), path.join(dir, 'keyring.py'));

  test('add_key, request_key, keyctl: ENOSYS in a mode-none session', async () => {
    if (process.arch !== 'x64') return void console.warn('the keyring fixture is x86-64 only');
    const dir = workspace();
    keyring(dir);
    const s = await noneSession(dir);
    expect((await s.run('python3 keyring.py add planted v')).output).toBe('add_key failed 38\n');
    expect((await s.run('python3 keyring.py read planted')).output).toBe('request_key failed 38\n');
    const keyctl = await s.run(
      `python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.syscall(250, 0, -4, 0), ctypes.get_errno())'`,
    );
    expect(keyctl.output).toBe('-1 38\n');
  });

  test('control: without the launcher the session adds a key to its user keyring', async () => {
    if (process.arch !== 'x64') return;
    const dir = workspace();
    keyring(dir);
    const s = await noneSession(dir, { host: unfilteredHost() });
    expect((await s.run('python3 keyring.py add planted v && python3 keyring.py read planted')).output).toBe('added\nREAD v\n');
    await s.run('python3 -c "import ctypes; ctypes.CDLL(None).syscall(250, 7, -4)"'); // KEYCTL_CLEAR of @u: leave nothing behind
  });
});

describe('a normal mode-none session under the filter', () => {
  test('commands, background jobs, exact runs and the editor work; every one runs under the filter', async () => {
    const dir = workspace();
    const s = await noneSession(dir);
    expect(await s.run('echo hi; (exit 3)')).toMatchObject({ exitCode: 3, output: 'hi\n' });
    expect((await s.run('sleep 0.2 & wait $!; echo job $?')).output).toBe('job 0\n');
    await s.run('(sleep 0.3; echo late > late.txt) &');
    await waitUntil('the background job', () => fs.existsSync(path.join(dir, 'late.txt')));
    expect((await s.run('yes | head -2; echo "${PIPESTATUS[*]}"')).output).toBe('y\ny\n141 0\n');
    const exact = await s.runExact(['grep', '-E', '^(Seccomp|NoNewPrivs):', '/proc/self/status']);
    expect(exact.output).toMatch(/^NoNewPrivs:\t1\nSeccomp:\t2\n/);
    const parsed = parseEditInput({ command: 'create', path: 'made.txt', file_text: 'by the editor\n' });
    if (!parsed.ok) throw new Error(parsed.text);
    const edited = await s.edit(parsed.edit, () => ({ apply: true }), { maxCharacters: 1000, ruleSubject: editRuleSubject });
    expect(edited.isError).toBeFalsy();
    expect(fs.readFileSync(path.join(dir, 'made.txt'), 'utf8')).toBe('by the editor\n');
    // A restarted shell is filtered too.
    await s.run('exit 4');
    expect((await s.run("grep '^Seccomp:' /proc/$$/status")).output).toBe('Seccomp:\t2\n');
  });

  test('a command sees the same environment, signal dispositions and SHLVL as without the launcher', async () => {
    const look = 'env -0 | sort -z | tr "\\0" "\\n"; grep -E "^Sig(Ign|Blk|Cgt):" /proc/self/status; echo "SHLVL=$SHLVL"';
    const env = { ODD: 'a\nb c', EMPTY: '', SPACES: '  x  ' };
    // One after the other in the same workspace, so that every path in the environment is the same.
    const dir = workspace();
    const seen = async (host?: SessionHost): Promise<{ run: string; exact: string }> => {
      const s = await noneSession(dir, { env, ...(host ? { host } : {}) });
      const run = (await s.run(look)).output;
      const exact = (await s.runExact(['env'])).output;
      await s.close();
      return { run, exact };
    };
    const a = await seen();
    const b = await seen(unfilteredHost());
    expect(a.run).toBe(b.run);
    expect(a.run).toContain('ODD=a\nb c\n');
    expect(a.run).toMatch(/^SigIgn:\t0+$/m);
    // The same entries; their order is the launcher's (bash lists names sorted), which no program may rely on.
    const entries = (t: string): string[] => t.split('\n').sort();
    expect(entries(a.exact)).toEqual(entries(b.exact));
    expect(a.exact).toContain('SPACES=  x  \n');
  });
});

describe('attacks on the launcher', () => {
  test("a python3 earlier on PATH (the worker's and the session's) is never run", async () => {
    const dir = workspace();
    // Outside /tmp: the session's PATH keeps no folder the session can write (env.ts `sessionSearchPath`), and this
    // test needs the fake python3 first on the session's PATH too.
    const fake = fs.mkdtempSync('/var/lib/aj-fake-python-');
    fs.chmodSync(fake, 0o755);
    const marker = path.join(fake, 'ran');
    fs.writeFileSync(path.join(fake, 'python3'), `#!/bin/sh\necho "$@" > ${marker}\nshift $(($# - 1))\nexec "$@"\n`, { mode: 0o755 });
    const saved = process.env.PATH;
    process.env.PATH = `${fake}:${saved}`;
    let ranFake: boolean;
    try {
      const host = new SessionHost();
      const s = await noneSession(dir, { host, env: { PATH: `${fake}:/usr/bin:/bin` } });
      expect((await s.run("grep '^Seccomp:' /proc/$$/status; command -v python3")).output).toBe(`Seccomp:\t2\n${fake}/python3\n`);
      expect(host.seccompLauncher().python).toBe('/usr/bin/python3');
    } finally {
      process.env.PATH = saved;
      ranFake = fs.existsSync(marker);
      fs.rmSync(fake, { recursive: true, force: true });
    }
    expect(ranFake).toBe(false);
    // A name to search for is refused.
    expect(findSeccompLauncher(['python3']).python).toBeNull();
  });

  test('a python3 that someone other than root can change is refused: the file, a folder on its way, a symlink in an open folder', () => {
    // Under root's home, so that every folder on the way is root's and 0755 or tighter (os.tmpdir() is 1777).
    const home = fs.mkdtempSync(path.join(os.homedir(), '.aj-launcher-test-'));
    const open = tempDir('aj-open-');
    try {
      fs.chmodSync(home, 0o755);
      const copy = path.join(home, 'python3');
      fs.copyFileSync('/usr/bin/python3', copy);
      fs.chmodSync(copy, 0o755);
      expect(findSeccompLauncher([copy])).toEqual({ python: copy }); // the same file, trusted: what the refusals below change
      fs.chmodSync(home, 0o777);
      expect(findSeccompLauncher([copy]).why).toMatch(/\.aj-launcher-test-\w+ is writable by its group or others \(mode 777\)/);
      fs.chmodSync(home, 0o755);
      fs.chmodSync(copy, 0o775);
      expect(findSeccompLauncher([copy]).why).toMatch(/python3 is writable by its group or others \(mode 775\)/);
      fs.chmodSync(copy, 0o755);
      fs.chownSync(copy, 4242, 4242);
      expect(findSeccompLauncher([copy]).why).toMatch(/python3 is owned by uid 4242/);
      fs.chmodSync(open, 0o777);
      fs.symlinkSync('/usr/bin/python3', path.join(open, 'python3'));
      expect(findSeccompLauncher([path.join(open, 'python3')]).why).toMatch(/is writable by its group or others \(mode 777\)/);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  test('PYTHON* variables in the launch environment change nothing in the launcher, and reach the session as given', async () => {
    const dir = workspace();
    const evil = tempDir('aj-evil-py-');
    fs.chmodSync(evil, 0o755);
    const marker = path.join(evil, 'imported');
    const plant = `open(${JSON.stringify(marker)}, "a").write(__name__ + "\\n")\n`;
    for (const m of ['ctypes', 'os', 'sitecustomize', 'usercustomize', 'hashlib', '_sha256', '_sha2', 'startup'])
      fs.writeFileSync(path.join(evil, `${m}.py`), plant);
    const env = {
      PYTHONPATH: evil,
      PYTHONSTARTUP: path.join(evil, 'startup.py'),
      PYTHONINSPECT: '1',
      PYTHONHOME: evil,
      PYTHONUSERBASE: evil,
      PYTHONWARNINGS: 'error',
      PYTHONSAFEPATH: '',
      PYTHONPLATLIBDIR: '../../../../' + evil,
    };
    const s = await noneSession(dir, { env });
    const r = await s.run('grep \'^Seccomp:\' /proc/$$/status; echo "$PYTHONPATH|$PYTHONINSPECT"');
    expect(r.output).toBe(`Seccomp:\t2\n${evil}|1\n`);
    expect((await s.runExact(['grep', '^Seccomp:', '/proc/self/status'])).output).toBe('Seccomp:\t2\n');
    expect(fs.existsSync(marker)).toBe(false);
  });

  test('Python modules planted in the workspace (the launch cwd) before a restart are not imported', async () => {
    const dir = workspace();
    const s = await noneSession(dir);
    const plant = 'open("/tmp/aj-planted-" + __name__, "w").write("x")\n';
    const names = ['ctypes', 'os', 'hashlib', '_sha256', '_sha2', 'encodings', 'codecs', 'sitecustomize', 'abc', 'io', 'stat', 'struct'];
    for (const m of names) fs.writeFileSync(path.join(dir, `${m}.py`), plant);
    fs.mkdirSync(path.join(dir, 'ctypes_pkg'));
    await s.run('exit 0'); // the shell restarts: a new launch in this cwd
    expect((await s.run("grep '^Seccomp:' /proc/$$/status")).output).toBe('Seccomp:\t2\n');
    expect((await s.runExact(['grep', '^Seccomp:', '/proc/self/status'])).output).toBe('Seccomp:\t2\n');
    for (const m of names) expect(fs.existsSync(`/tmp/aj-planted-${m}`)).toBe(false);
  });

  test('the session user cannot rewrite the program file the launcher reads', async () => {
    const dir = workspace();
    const s = await noneSession(dir);
    const file = s.sandboxOptions.seccompFilter!;
    const before = fs.readFileSync(file);
    const r = await s.run(`: > ${file}; printf x >> ${file}; mv ${file} ${file}.old; ln -sf /dev/null ${file}`);
    expect(r.output.match(/Permission denied/g)?.length).toBe(4);
    expect(fs.readFileSync(file)).toEqual(before);
  });

  describe('fd 3 not the program the worker wrote: the launch ends (126) and the program never runs', () => {
    /** Launches `sh -c 'grep Seccomp...'` as a mode-none session would, with the filter file `file`. */
    function launch(file: string, opts: { inherit3?: string } = {}): { status: number | null; stdout: string; stderr: string } {
      const session = { ...baseOptions(), seccompFilter: file };
      const l = launchArgs(session, ['/bin/sh', '-c', "echo RAN; grep '^Seccomp:' /proc/self/status"]);
      // A descriptor 3 the spawner holds without close-on-exec (a swapped program, if the closer kept it).
      const stdio: Array<'pipe' | number> = ['pipe', 'pipe', 'pipe'];
      if (opts.inherit3) stdio.push(fs.openSync(opts.inherit3, 'r'));
      const r = spawnSync(l.file, l.args, { env: { PATH: '/usr/bin:/bin' }, stdio, encoding: 'utf8', timeout: 20_000 });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    }
    /** Mode-none options with the launcher found here and the SHA-256 of this machine's filter. */
    function baseOptions(): SandboxOptions {
      const found = findSeccompLauncher();
      if (!found.python) throw new Error(found.why);
      return {
        mode: 'none',
        identity: null,
        network: false,
        writable: [],
        readable: [],
        hide: [],
        setpriv: null,
        seccompLauncher: { python: found.python, sha256: filterSha256()! },
      };
    }
    const allowAll = encodeFilter([[BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]]);

    test('the right program: the launch runs under the filter', () => {
      const good = path.join(tempDir('aj-fd3-'), 'seccomp.bpf');
      writeSeccompFilter(good);
      const r = launch(good);
      expect(r).toMatchObject({ status: 0, stdout: 'RAN\nSeccomp:\t2\n' });
    });

    test('rewritten with an allow-all program, with another of the same length, truncated, or emptied', () => {
      const dir = tempDir('aj-fd3-');
      const good = path.join(dir, 'good.bpf');
      writeSeccompFilter(good);
      const bytes = fs.readFileSync(good);
      const flipped = Buffer.from(bytes);
      flipped.writeUInt8(flipped.readUInt8(flipped.length - 4) ^ 1, flipped.length - 4); // the last return value changed, same length
      for (const [name, content] of [
        ['allow-all', allowAll],
        ['same length', flipped],
        ['truncated', bytes.subarray(0, bytes.length - 8)],
        ['empty', Buffer.alloc(0)],
      ] as const) {
        const file = path.join(dir, `${name}.bpf`);
        fs.writeFileSync(file, content, { mode: 0o600 });
        const r = launch(file);
        expect({ name, status: r.status, stdout: r.stdout }).toEqual({ name, status: 126, stdout: '' });
        expect(r.stderr).toMatch(/cannot load the session's seccomp filter: fd 3 is not the program the worker wrote/);
      }
    });

    test('removed, or a folder: the closer cannot open it and ends the launch, even with an allow-all program on an inherited fd 3', () => {
      const dir = tempDir('aj-fd3-');
      const swapped = path.join(dir, 'allow.bpf');
      fs.writeFileSync(swapped, allowAll);
      for (const file of [path.join(dir, 'missing.bpf'), dir]) {
        const r = launch(file, { inherit3: swapped });
        expect({ file, status: r.status, stdout: r.stdout }).toEqual({ file, status: 126, stdout: '' });
      }
    });
  });
});

describe('without a python3 the launcher may use', () => {
  test('the session runs without the filter and the host says so once; the worker note says WITHOUT', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const host = new SessionHost({ pythons: ['/nonexistent/python3'] });
      const s = await noneSession(workspace(), { host });
      const s2 = await noneSession(workspace(), { host });
      expect((await s.run("grep '^Seccomp:' /proc/$$/status; echo ok")).output).toBe('Seccomp:\t0\nok\n');
      expect((await s2.run('echo ok')).output).toBe('ok\n');
      expect(warn.mock.calls).toEqual([
        ['sessions without the sandbox run without the seccomp filter: /nonexistent/python3: ENOENT', { type: 'AgentJobsSandboxWarning' }],
      ]);
      expect(seccompLauncherNote(host.seccompLauncher())).toMatch(
        /^sandbox none: sessions run WITHOUT the seccomp filter \(\/nonexistent\/python3: ENOENT\)/,
      );
    } finally {
      warn.mockRestore();
    }
    expect(seccompLauncherNote(findSeccompLauncher())).toMatch(
      /^sandbox none: every session process runs under the seccomp filter, loaded by \/usr\/bin\/python3/,
    );
  });
});
