/**
 * Adversary round 21: the git guard's record of programs the person's git config names that are missing at session
 * start (git-guard.ts `valueFiles`, `PATH_WORD`, `NOT_A_PATH`, `missingPath`; git-audit.ts moves what appears there).
 * Real sessions as root (the person). Each test asserts the safe behaviour and is skipped while `OPEN` is true (main
 * stays green); each was run un-skipped on 8f35e9a and failed as written below.
 *
 * Kind 6 (git files the person's host git will obey): a missing folder named by a bare word (no `/`, no extension),
 * which a program path of the same value is relative to. `PATH_WORD` keeps bare words out of the missing record (they
 * are run from `PATH`), and only an existing folder a word names becomes a base for the other words. So in
 * `!cd tools && ./fmt.sh` only `<ws>/fmt.sh` is recorded, in `!PATH="$PWD/bin:$PATH" fmt` nothing, and in
 * `!cd "$GIT_PREFIX" && ./run.sh` only `<ws>/run.sh` (the alias runs from the person's subfolder). The session makes
 * `tools/fmt.sh`, `bin/fmt` or `src/run.sh`; the person's `git fmt` runs it as root (OBSERVED: the marker holds
 * `root`; the `PATH=` case is near the open gap docs/security.md lists, a bare word after an expansion, `$PWD/lint`). Fix: record a bare word of a
 * value as a missing folder too when it is the operand of `cd`/`pushd` or a `PATH=` entry, and try every path word
 * against each such folder (missing or not) and against each folder of the workspace for a `$GIT_PREFIX`-relative
 * run; or, wider, when a value holds `cd` or `PATH=`, record the words against every folder the person's git may
 * start in (a path word anywhere under the workspace then counts). The same kind by quoting: `!tools/fm\<newline>t.sh`
 * (a backslash-newline in the value) is `tools/fmt.sh` to `sh`, while git-guard.ts `shellWords` keeps the newline in
 * the word (and the blank split cuts it at the newline), so nothing is recorded; fix: drop a backslash-newline outside
 * single quotes in `shellWords`, as the shell does.
 *
 * Kind 6, timing: the audit moves what appears at a recorded path only after each command, edit and at close, so
 * while the session is open (idle between commands) a background job's file there is what the person's git runs.
 * Steps: `core.fsmonitor = tools/fsmon.sh`, `tools/` there and `fsmon.sh` missing; the session starts a job that
 * writes `tools/fsmon.sh` once the host makes `go`; the command returns (audit done); the job writes; the person runs
 * `git status` on the host while the session is still open. OBSERVED: the marker holds `root`. Fix: keep what the
 * session makes at a recorded missing path out of the host's view until the audit has seen it (bind, in the sandbox
 * only, a folder of the worker's at the deepest missing folder, or a placeholder the audit replaces after review),
 * or watch the recorded paths' folders continuously (inotify/fanotify from the worker, moving on create) and say the
 * gap that remains; at least document that the person's own git must not run in the workspace while a session is open.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { hostBash, personsRepo, plant, ran } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

/**
 * True while the gaps below are open: their tests are skipped so that main stays green. Closed: git-guard.ts records
 * the folder a `cd`/`PATH=` word names as a base (missing or not) and, for a value that can change folder or PATH,
 * each program word's name anywhere in the workspace (`GuardedGit.anywhere`, moved by the audit); `shellWords` drops a
 * backslash-newline; git-audit.ts `watchMissing` moves what appears at a missing path at once, between commands too.
 */
const OPEN = false;

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;
const tOpen = OPEN ? test.skip : test;

dRoot('round 21: missing programs named relative to a folder a bare word names', () => {
  const cases: { value: string; setup?: (ws: string) => void; session: (m: string) => string; where?: string }[] = [
    { value: '!cd tools && ./fmt.sh', session: (m) => `mkdir tools && ${plant(m, 'tools/fmt.sh')} && echo planted` },
    { value: '!PATH="$PWD/bin:$PATH" fmt', session: (m) => `mkdir bin && ${plant(m, 'bin/fmt')} && echo planted` },
    { value: '!sh -c "cd tools; ./fmt.sh"', session: (m) => `mkdir tools && ${plant(m, 'tools/fmt.sh')} && echo planted` },
    // A backslash-newline inside the path: the shell joins the lines, the guard's words keep the newline.
    { value: '!tools/fm\\\nt.sh', session: (m) => `mkdir tools && ${plant(m, 'tools/fmt.sh')} && echo planted` },
    {
      value: '!cd "$GIT_PREFIX" && ./run.sh',
      setup: (ws) => fs.mkdirSync(path.join(ws, 'src')),
      session: (m) => `${plant(m, 'src/run.sh')} && echo planted`,
      where: 'src',
    },
  ];
  for (const { value, setup, session, where } of cases)
    tOpen(`alias.fmt = ${value}, the program missing at start: the person's git fmt does not run the session's`, async () => {
      const { ws, git, marker } = personsRepo();
      try {
        setup?.(ws);
        git('config', 'alias.fmt', value);
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(session(marker));
        await s.close();
        // The guard moved it: at once (the watch; the plant's chmod then fails) or in the command's audit.
        expect(r.output).toMatch(/moved to \.git\/agent-jobs-quarantine/);
        hostBash(path.join(ws, where ?? '.'), 'git fmt');
        expect(ran(marker)).toBe('not run');
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });
});

dRoot('round 21: a program planted at a recorded missing path between commands, while the session is open', () => {
  tOpen("core.fsmonitor = tools/fsmon.sh: the person's git status during the session does not run the session's job's file", async () => {
    const { ws, git, marker } = personsRepo();
    try {
      fs.mkdirSync(path.join(ws, 'tools'));
      git('config', 'core.fsmonitor', 'tools/fsmon.sh');
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`(while [ ! -e go ]; do sleep 0.05; done; ${plant(marker, 'tools/fsmon.sh')}) >/dev/null 2>&1 & echo started`);
      expect(r.output).toContain('started');
      fs.writeFileSync(path.join(ws, 'go'), '');
      // Waits for the job's write or its move (bounded), not a fixed time: the person's git then runs on what is there.
      const log = path.join(ws, '.git/agent-jobs-quarantine/log.jsonl');
      const end = Date.now() + 15_000;
      const seen = (): boolean =>
        fs.existsSync(path.join(ws, 'tools/fsmon.sh')) || (fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('tools/fsmon.sh'));
      while (!seen() && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
      hostBash(ws, 'git status --short');
      const during = ran(marker);
      await s.close();
      expect(during).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});
