/**
 * Attacks on the git audit's missing paths (git-guard.ts `GuardedGit.missing`, git-audit.ts `appeared`): a program
 * the person's git config names in the workspace, missing when the session starts (adversary round 19), created by
 * other routes than a plain write: by rename into place, as a hard link, a folder at the path, a symlinked folder on
 * the way, a symlink the person made replaced, a name made again by a job after the last command's audit, a mixed
 * case name, a `..` in the value. Each ends with the person's git on the host, which must not run the session's
 * program. Then the trade: a name a legitimate install writes is moved too, with a note saying what to do, and a
 * word that is no path (`main`, `origin`) is left alone. Real sessions, as root (the person).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { hostBash, personsRepo, plant, ran } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;

dRoot("the git audit's missing paths: routes around a plain write", () => {
  // core.fsmonitor runs at `git status`; `tools/` exists (the person's), `tools/fsmon.sh` does not.
  const cases: { what: string; value?: string; setup?: (ws: string) => void; session: (marker: string) => string[] }[] = [
    {
      what: 'renamed into place from a file written beside it',
      session: (m) => [`${plant(m, 'tools/x.tmp')} && mv tools/x.tmp tools/fsmon.sh && echo planted`],
    },
    {
      what: 'a hard link to a program written elsewhere in the workspace',
      session: (m) => [`${plant(m, 'other.sh')} && ln other.sh tools/fsmon.sh && echo planted`],
    },
    {
      what: 'the folder on the way replaced by a symlink to a folder holding the program',
      session: (m) => [`mkdir alt && ${plant(m, 'alt/fsmon.sh')} && mv tools tools.old && ln -s alt tools && echo planted`],
    },
    {
      what: 'made, removed before the audit, then made again by a job after the audit',
      session: (m) => [
        `${plant(m, 'tools/fsmon.sh')} && rm tools/fsmon.sh && echo planted`,
        // The job waits for a file the next command makes, so it writes after that command's audit began or ended.
        `(while [ ! -e go ]; do sleep 0.05; done; ${plant(m, 'tools/fsmon.sh')}) >/dev/null 2>&1 & echo started`,
        'touch go; echo go',
      ],
    },
    {
      what: 'a mixed-case name, as the config spells it',
      value: 'Tools/FSMon.sh',
      setup: (ws) => fs.mkdirSync(path.join(ws, 'Tools')),
      session: (m) => [`${plant(m, 'Tools/FSMon.sh')} && echo planted`],
    },
    {
      what: "a `..` in the value, the folder before it made a symlink so that the kernel's path differs from the read one",
      value: 'sub/../tools/fsmon.sh',
      session: (m) => [`mkdir -p a/b a/tools && ${plant(m, 'a/tools/fsmon.sh')} && rm -rf sub && ln -s a/b sub && echo planted`],
    },
  ];
  for (const { what, value, setup, session } of cases)
    test(`core.fsmonitor = ${value ?? 'tools/fsmon.sh'}, missing at start: ${what}`, async () => {
      const { ws, git, marker } = personsRepo();
      try {
        fs.mkdirSync(path.join(ws, 'tools'));
        setup?.(ws);
        git('config', 'core.fsmonitor', value ?? 'tools/fsmon.sh');
        const s = await startSession({ cwd: ws, workspace: ws });
        for (const c of session(marker)) await s.run(c);
        await s.close();
        hostBash(ws, 'git status --short');
        expect(ran(marker)).toBe('not run');
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });

  test('a folder at the named path is moved too, and the result says so', async () => {
    const { ws, git, marker } = personsRepo();
    git('config', 'alias.lint', '!node_modules/.bin/eslint .');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('mkdir -p node_modules/.bin/eslint && echo made');
    await s.close();
    expect({
      made: r.output.startsWith('made'),
      noted: r.output.includes('node_modules/.bin/eslint'),
      left: fs.existsSync(path.join(ws, 'node_modules/.bin/eslint')),
    }).toEqual({
      made: true,
      noted: true,
      left: false,
    });
    expect(ran(marker)).toBe('not run');
  });

  test("the person's symlink to a missing program, replaced by the session with a file: the link is put back, the file moved", async () => {
    const { ws, git, marker } = personsRepo();
    try {
      fs.mkdirSync(path.join(ws, 'scripts'));
      fs.symlinkSync('../build/fmt.sh', path.join(ws, 'scripts/fmt.sh'));
      git('config', 'alias.fmt', '!./scripts/fmt.sh');
      const s = await startSession({ cwd: ws, workspace: ws });
      await s.run(`rm scripts/fmt.sh && ${plant(marker, 'scripts/fmt.sh')} && echo planted`);
      await s.close();
      hostBash(ws, 'git fmt');
      expect({ ran: ran(marker), link: fs.readlinkSync(path.join(ws, 'scripts/fmt.sh')) }).toEqual({
        ran: 'not run',
        link: '../build/fmt.sh',
      });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});

dRoot("the git audit's missing paths: the trade", () => {
  test('what `npm install` writes at a path the config names is moved too, and the note says to review it and move it back', async () => {
    const { ws, git } = personsRepo();
    git('config', 'alias.lint', '!node_modules/.bin/eslint .');
    const s = await startSession({ cwd: ws, workspace: ws });
    // What npm writes: a package's bin script, and a relative symlink to it in `.bin`.
    const r = await s.run(
      'mkdir -p node_modules/eslint/bin node_modules/.bin && printf "#!/bin/sh\\n" > node_modules/eslint/bin/eslint.js && ln -s ../eslint/bin/eslint.js node_modules/.bin/eslint && echo installed',
    );
    await s.close();
    expect({
      installed: r.output.startsWith('installed'),
      review: r.output.includes('move it back from the quarantine'),
      link: fs.existsSync(path.join(ws, 'node_modules/.bin/eslint')),
      script: fs.existsSync(path.join(ws, 'node_modules/eslint/bin/eslint.js')),
    }).toEqual({ installed: true, review: true, link: false, script: true });
    const log = fs.readFileSync(path.join(ws, '.git/agent-jobs-quarantine/log.jsonl'), 'utf8');
    expect(log).toContain('"path":"node_modules/.bin/eslint"');
  });

  test('words that are no path (a branch, a remote, a user) leave files of those names alone', async () => {
    const { ws, git } = personsRepo();
    git('remote', 'add', 'origin', 'https://github.com/acme/widget.git');
    git('config', 'branch.main.remote', 'origin');
    git('config', 'branch.main.merge', 'refs/heads/main');
    git('config', 'user.name', 'Pat');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('printf x > main && printf x > origin && printf x > Pat && echo made');
    await s.close();
    expect({
      made: r.output.trim(),
      left: ['main', 'origin', 'Pat'].filter((n) => fs.existsSync(path.join(ws, n))),
    }).toEqual({ made: 'made', left: ['main', 'origin', 'Pat'] });
  });
});
