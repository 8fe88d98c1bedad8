/**
 * The session's seccomp filter without bwrap (mode `none`): a small launcher, run by a fixed
 * python3, that loads the same program bwrap loads (seccomp.ts `writeSeccompFilter`'s file, the
 * prefix of memory.ts and the filter of seccomp.ts) and then execs the launch's program in place
 * (same pid). Every launch of a mode-`none` session goes through it (sandbox.ts `launchArgs`: the
 * shell, exact runs, the editor's helper), so the claims that rest on the filter (no process of the
 * session peeks at bash's control line, reaches into another with `ptrace` or `pidfd_getfd`, or
 * calls the keyrings) hold without the sandbox too. Why python3: bwrap cannot be assumed in mode
 * `none`, python3 can (the README requires it; the Dockerfile installs it), and its `ctypes` reaches
 * `prctl(2)` without a compiler.
 *
 * What the launcher trusts, and why nothing of the session reaches it:
 * - its interpreter is a fixed absolute path ({@link SECCOMP_LAUNCHER_PYTHONS}), never one found on
 *   `PATH`, owned by root (or the worker's user) and writable by no one else, nor any folder on its
 *   way ({@link findSeccompLauncher});
 * - it runs with an empty environment (bash `exec -c`) and `-I -S -B`: no `PYTHON*` variable, no
 *   user site, no `site`, no current folder (the workspace) on `sys.path`, no bytecode written; the
 *   environment of the launch reaches the program as `NAME=value` arguments, exactly what the
 *   closer's `exec` would have passed (fds.ts `closingLaunch`);
 * - its code is an argument of the worker's ({@link LAUNCHER_SOURCE}), not a file;
 * - the program comes on fd 3, which the closer opens from the session's private folder, and must
 *   hash to the SHA-256 the worker computed when it wrote the file: a file swapped or rewritten
 *   since (a worker that is not root shares its user with the session) ends the launch.
 * Any failure ends the launch with exit status 126 and one line on stderr; the program never runs
 * without the filter.
 *
 * Order, as bwrap's: `PR_SET_NO_NEW_PRIVS`, then the filter (`prctl(PR_SET_SECCOMP)`), then setpriv
 * and the program under it. Nothing on that path is refused: setpriv's `setresuid`, `setgroups`,
 * `capset`, `prctl(PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG)` and bash's start are
 * allowed (the filter refuses `prctl` only for another seccomp filter). Python ignores SIGPIPE and
 * SIGXFSZ, and an ignored signal stays ignored across exec: both are set back to the default first.
 * Attack test: test/unit/attack/no-sandbox-seccomp.test.ts.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { closingLaunch } from './fds';
import { MINIMAL_ENV } from './identity';
import { seccompFilterBytes, writeSeccompFilter } from './seccomp';

/** The interpreters the launcher may run with, first found wins: absolute, never from `PATH`. */
export const SECCOMP_LAUNCHER_PYTHONS: readonly string[] = ['/usr/bin/python3', '/bin/python3'];

/**
 * The launcher's code, run as `python3 -I -S -B -c`: `argv[1]` the program's SHA-256 (hex), `argv[2]`
 * the number N of environment entries, then N `NAME=value` entries, then the program and its
 * arguments. Reads the program from fd 3 and closes it, checks the hash, sets no_new_privs, loads
 * the filter, restores SIGPIPE and SIGXFSZ, execs the program with that environment (searching its
 * `PATH` as the closer's `exec` would). Exits 126 with a line on stderr on any failure.
 */
export const LAUNCHER_SOURCE = [
  'import ctypes, os, sys, _signal',
  'def fail(why):',
  "    os.write(2, b'agent-jobs: cannot load the session\\'s seccomp filter: ' + os.fsencode(why) + b'\\n')",
  '    os._exit(126)',
  'try:',
  '    from _sha2 import sha256',
  'except ImportError:',
  '    try:',
  '        from _sha256 import sha256',
  '    except ImportError:',
  '        from hashlib import sha256',
  'data = b""',
  'try:',
  '    while True:',
  '        chunk = os.read(3, 65536)',
  '        if not chunk: break',
  '        data += chunk',
  '    os.close(3)',
  'except OSError as e:',
  "    fail('fd 3 (the program): ' + e.strerror)",
  'if sha256(data).hexdigest() != sys.argv[1]:',
  "    fail('fd 3 is not the program the worker wrote (%d bytes, another SHA-256)' % len(data))",
  'n = len(data) // 8',
  'class Prog(ctypes.Structure):',
  "    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_char_p)]",
  'prog = Prog(n, data)',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'prctl = libc.prctl',
  'prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]',
  'if prctl(38, 1, 0, 0, 0) != 0:',
  "    fail('prctl(PR_SET_NO_NEW_PRIVS): ' + os.strerror(ctypes.get_errno()))",
  'if prctl(22, 2, ctypes.addressof(prog), 0, 0) != 0:',
  "    fail('prctl(PR_SET_SECCOMP): ' + os.strerror(ctypes.get_errno()))",
  '_signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)',
  '_signal.signal(_signal.SIGXFSZ, _signal.SIG_DFL)',
  'k = int(sys.argv[2])',
  "env = dict(e.split('=', 1) for e in sys.argv[3:3 + k])",
  'argv = sys.argv[3 + k:]',
  'try:',
  '    os.execvpe(argv[0], argv, env)',
  'except OSError as e:',
  "    fail('cannot run %s: %s' % (argv[0], e.strerror))",
  '',
].join('\n');

/** The interpreter's flags: isolated (no `PYTHON*` variables, no user site, no cwd on the path), no `site`, no bytecode written. */
export const LAUNCHER_FLAGS: readonly string[] = ['-I', '-S', '-B'];

/**
 * The launcher's command line before the environment and the program (fds.ts `closingLaunch`
 * appends those): `python` with {@link LAUNCHER_FLAGS}, {@link LAUNCHER_SOURCE}, and the SHA-256
 * (hex) the program on fd 3 must have.
 */
export function launcherArgv(python: string, sha256: string): string[] {
  return [python, ...LAUNCHER_FLAGS, '-c', LAUNCHER_SOURCE, sha256];
}

/** The launcher found by {@link findSeccompLauncher}: its interpreter, or null and why not. */
export type SeccompLauncherLookup = { python: string; why?: undefined } | { python: null; why: string };

/**
 * Why `file` (absolute, symlinks resolved) may not be trusted for the launcher's interpreter: it or
 * a folder on its way is owned by another user than root or the worker's, or writable by its group
 * or others (a folder with the sticky bit too). Undefined when it may.
 */
function untrusted(file: string): string | undefined {
  const me = process.getuid?.() ?? 0;
  const chain = [file];
  for (let d = path.dirname(file); ; d = path.dirname(d)) {
    chain.push(d);
    if (d === path.dirname(d)) break;
  }
  for (const p of chain) {
    const st = fs.statSync(p);
    if (st.uid !== 0 && st.uid !== me) return `${p} is owned by uid ${st.uid}`;
    if ((st.mode & 0o022) !== 0) return `${p} is writable by its group or others (mode ${(st.mode & 0o7777).toString(8)})`;
  }
  return undefined;
}

/**
 * The python3 the launcher runs with: the first of `candidates` that exists, resolves to a file
 * that only root (or the worker's user) can change, and loads this machine's filter and runs
 * `true` under it (a kernel without seccomp filters fails here). Each candidate is checked as given;
 * `PATH` is never searched.
 * @param candidates absolute paths @default {@link SECCOMP_LAUNCHER_PYTHONS}
 * @returns `{python}`, or `{python: null, why}` naming each candidate's problem
 */
export function findSeccompLauncher(candidates: readonly string[] = SECCOMP_LAUNCHER_PYTHONS): SeccompLauncherLookup {
  const problems: string[] = [];
  for (const candidate of candidates) {
    let real: string;
    try {
      if (!path.isAbsolute(candidate)) throw new Error('not an absolute path');
      real = fs.realpathSync(candidate);
      fs.accessSync(real, fs.constants.X_OK);
      // The path as given (a symlink's folder) and the file it resolves to: both only root's (or the worker's) to change.
      const why = untrusted(path.dirname(candidate)) ?? untrusted(real);
      if (why) throw new Error(why);
    } catch (err) {
      problems.push(`${candidate}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      continue;
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-jobs-seccomp-probe-'));
    try {
      const file = writeSeccompFilter(path.join(dir, 'seccomp.bpf'));
      if (!file) return { python: null, why: `no seccomp filter for this architecture (${process.arch})` };
      const launch = closingLaunch(
        ['/bin/sh', '-c', 'grep -q "^Seccomp:[[:space:]]*2" /proc/self/status'],
        file,
        [],
        launcherArgv(candidate, filterSha256()!),
      );
      execFileSync(launch.file, launch.args, { env: MINIMAL_ENV, stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
      return { python: candidate };
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
      problems.push(`${candidate}: the filter could not be loaded${stderr ? ` (${stderr})` : ''}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return { python: null, why: problems.join('; ') || 'no candidate given' };
}

/** The SHA-256 (hex) of this machine's filter (seccomp.ts `seccompFilterBytes`), as the worker holds it: what the launcher checks fd 3 against; null without a filter. */
export function filterSha256(): string | null {
  const bytes = seccompFilterBytes();
  return bytes ? createHash('sha256').update(bytes).digest('hex') : null;
}

/**
 * The worker's line about mode `none` sessions and the filter: that they run under it, or that they
 * run without it and why (python3 missing or unusable).
 */
export function seccompLauncherNote(found: SeccompLauncherLookup): string {
  if (found.python)
    return `sandbox none: every session process runs under the seccomp filter, loaded by ${found.python} (no ptrace, pidfd_getfd, MSG_PEEK, keyrings, unix sockets)`;
  return (
    `sandbox none: sessions run WITHOUT the seccomp filter (${found.why}); a job of a session can peek at bash's control line, ptrace and ` +
    `pidfd_getfd the session's processes and call the kernel keyrings: install python3 at ${SECCOMP_LAUNCHER_PYTHONS[0]} (see docs/security.md)`
  );
}
