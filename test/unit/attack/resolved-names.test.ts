/**
 * Attacks on the git guard's names that an interpreter completes (git-guard.ts `recordCompletions`,
 * `interpreterWords`, `blockerOf`; git-audit.ts `moveCompleted`; adversary round 23, F6), as an attacker would try them
 * once `scripts/fmt.js` for `!node scripts/fmt` is moved: the completed file there at start rewritten, its folder there
 * at start (so nothing is missing), the folder renamed away or made a symlink, a package's `__init__.py`, Python's cached
 * code used unchecked, a bare operand of `sh`, a file standing where a folder of the path would be (a program's and an
 * include's), a background job after the audit, a value that changes folder. Real sessions as root (the person), the
 * person's git run on the host; each asserts the safe behaviour: the person's git does not run what the session wrote.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { guardedGit, type GuardedGit } from '../../../src/session/git-guard';
import type { BashSession } from '../../../src/session/session';
import { closeSessions, removeTempDirs, startSession, waitUntil } from '../session/helpers';
import { hostBash, personsRepo, plant, ran } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

const dRoot = process.getuid?.() === 0 ? describe : describe.skip;

/** Whether the quarantine's log of `ws` names `rel` as moved. */
const logged = (ws: string, rel: string): boolean => {
  const log = path.join(ws, '.git/agent-jobs-quarantine/log.jsonl');
  return fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes(`"path":"${rel}"`);
};

/** JavaScript, and Python, that leave `marker` when they run. */
const js = (marker: string): string => `require('fs').writeFileSync('${marker}', 'ran')`;
const py = (marker: string): string => `open('${marker}', 'w').write('ran')`;

/** Shell text that writes `code` (one line, no single quote) to `file`. */
const write = (file: string, code: string): string => `printf '%s\\n' "${code}" > ${file}`;

/**
 * Runs `fn` with a session on the person's repository whose config has `alias.x = !node scripts/fmt` and an empty
 * `scripts/` (so `scripts/fmt.js` is a missing name the guard completes); the marker file is removed afterwards.
 */
async function withFmtAlias(fn: (r: { ws: string; marker: string; s: BashSession }) => Promise<void>): Promise<void> {
  const { ws, git, marker } = personsRepo();
  try {
    git('config', 'alias.x', '!node scripts/fmt');
    fs.mkdirSync(path.join(ws, 'scripts'));
    await fn({ ws, marker, s: await startSession({ cwd: ws, workspace: ws }) });
  } finally {
    fs.rmSync(marker, { force: true });
  }
}

interface Case {
  name: string;
  alias: string;
  setup: (ws: string) => void;
  attack: (marker: string) => string;
  /** The folder (relative) the person runs `git x` from. */
  from?: string;
}

const cases: Case[] = [
  {
    name: "node's completion there at start (`scripts/fmt.js`), rewritten in place, removed and made again",
    alias: '!node scripts/fmt',
    setup: (ws) => {
      fs.mkdirSync(path.join(ws, 'scripts'));
      fs.writeFileSync(path.join(ws, 'scripts/fmt.js'), "console.log('fmt')\n");
    },
    attack: (m) => `${write('scripts/fmt.js', js(m))}; rm -f scripts/fmt.js; ${write('scripts/fmt.js', js(m))}`,
  },
  {
    name: 'the folder there at start, `tools/x.js` missing: written, and linked to a file elsewhere',
    alias: '!node tools/x',
    setup: (ws) => fs.mkdirSync(path.join(ws, 'tools')),
    attack: (m) => `${write('evil.js', js(m))}; ln -s ../evil.js tools/x.js`,
  },
  {
    name: 'the folder there at start renamed away and made again with `x.js` in it',
    alias: '!node tools/x',
    setup: (ws) => fs.mkdirSync(path.join(ws, 'tools')),
    attack: (m) => `mv tools t2 && mkdir tools && ${write('tools/x.js', js(m))}`,
  },
  {
    name: 'the folder there at start replaced by a symlink to a folder holding `x.js`',
    alias: '!node tools/x',
    setup: (ws) => fs.mkdirSync(path.join(ws, 'tools')),
    attack: (m) => `mkdir t2 && ${write('t2/x.js', js(m))} && mv tools t3 && ln -s t2 tools`,
  },
  {
    name: "a folder's entry point there at start (`tools/lint/index.js`), rewritten",
    alias: '!node tools/lint',
    setup: (ws) => {
      fs.mkdirSync(path.join(ws, 'tools/lint'), { recursive: true });
      fs.writeFileSync(path.join(ws, 'tools/lint/index.js'), "console.log('lint')\n");
    },
    attack: (m) => write('tools/lint/index.js', js(m)),
  },
  {
    name: "the package's `__init__.py`, missing at start beside the person's `tools/check.py`",
    alias: '!python3 -m tools.check',
    setup: (ws) => {
      fs.mkdirSync(path.join(ws, 'tools'));
      fs.writeFileSync(path.join(ws, 'tools/check.py'), "print('check')\n");
    },
    attack: (m) => write('tools/__init__.py', py(m)),
  },
  {
    name: "Python's cached code for the person's `tools/check.py`, compiled unchecked (used whatever the source says)",
    alias: '!python3 -m tools.check',
    setup: (ws) => {
      fs.mkdirSync(path.join(ws, 'tools'));
      fs.writeFileSync(path.join(ws, 'tools/check.py'), "print('check')\n");
    },
    attack: (m) =>
      `${write('/tmp/evil.py', py(m))}; python3 -c "import py_compile, importlib.util as u; py_compile.compile('/tmp/evil.py', cfile=u.cache_from_source('tools/check.py'), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)"`,
  },
  {
    name: 'a bare operand of `node` (`lint`, run from the root as `lint.js`), missing at start',
    alias: '!node lint',
    setup: () => undefined,
    attack: (m) => write('lint.js', js(m)),
  },
  {
    name: 'a regular file where the folder of the path is (`scripts`), replaced by a folder with `fmt.js`',
    alias: '!node scripts/fmt',
    setup: (ws) => fs.writeFileSync(path.join(ws, 'scripts'), 'notes\n'),
    attack: (m) => `rm -f scripts; mv scripts s2; mkdir -p scripts && ${write('scripts/fmt.js', js(m))}`,
  },
  {
    name: "a value that changes folder: a module file `chk.py` in the person's `src/`",
    alias: '!cd "$GIT_PREFIX" && python3 -m chk',
    setup: (ws) => fs.mkdirSync(path.join(ws, 'src')),
    attack: (m) => write('src/chk.py', py(m)),
    from: 'src',
  },
];

dRoot("kind 6: a program the person's config names by a name its interpreter completes (attacker's variants)", () => {
  test.each(cases)('$alias: $name', async ({ alias, setup, attack, from }) => {
    const { ws, git, marker } = personsRepo();
    try {
      git('config', 'alias.x', alias);
      setup(ws);
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`${attack(marker)}; echo tried`);
      expect(r.output).toContain('tried');
      hostBash(path.join(ws, from ?? '.'), 'git x'); // the person's git on the host, during the run
      const during = ran(marker);
      await s.close();
      hostBash(path.join(ws, from ?? '.'), 'git x'); // and after it
      expect({ during, after: ran(marker) }).toEqual({ during: 'not run', after: 'not run' });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('an include whose folder is a regular file at start (`../conf/x`): the file cannot be replaced by a folder with the include', async () => {
    const { ws, git, marker } = personsRepo();
    try {
      fs.writeFileSync(path.join(ws, 'conf'), 'notes\n');
      git('config', 'include.path', '../conf/x');
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        `rm -f conf; mv conf c2; mkdir -p conf && printf '[alias]\\n\\tzz = "!id -un > ${marker}"\\n' > conf/x; echo tried`,
      );
      expect(r.output).toContain('tried');
      hostBash(ws, 'git zz');
      const during = ran(marker);
      await s.close();
      hostBash(ws, 'git zz');
      expect({ during, after: ran(marker) }).toEqual({ during: 'not run', after: 'not run' });
      expect(fs.readFileSync(path.join(ws, 'conf'), 'utf8')).toBe('notes\n');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('`!node scripts/fmt`: a background job writes `scripts/fmt.js` after the audit; the watch moves it while the session is open', () =>
    withFmtAlias(async ({ ws, marker, s }) => {
      const r = await s.run(
        `(while [ ! -e go ]; do sleep 0.05; done; ${write('scripts/fmt.js', js(marker))}; : > done) >/dev/null 2>&1 & echo started`,
      );
      expect(r.output).toContain('started');
      fs.writeFileSync(path.join(ws, 'go'), '');
      await waitUntil('the job', () => fs.existsSync(path.join(ws, 'done')), 20_000);
      await waitUntil('the move of scripts/fmt.js', () => logged(ws, 'scripts/fmt.js'), 10_000);
      hostBash(ws, 'git x');
      const during = ran(marker);
      await s.close();
      expect(during).toBe('not run');
    }));

  test("what the session makes beside a completed name is left: `scripts/other.js`, `scripts/fmtx.js`, the person's `scripts/fmt.test.js` readable", async () => {
    const { ws, git } = personsRepo();
    git('config', 'alias.x', '!node scripts/fmt');
    fs.mkdirSync(path.join(ws, 'scripts'));
    fs.writeFileSync(path.join(ws, 'scripts/fmt.test.js'), 'test\n');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('echo a > scripts/other.js && echo b > scripts/fmtx.js && cat scripts/fmt.test.js && echo ok');
    await s.close();
    expect(r.output).toContain('test\nok');
    expect(r.output).not.toMatch(/quarantine/);
    expect(fs.readFileSync(path.join(ws, 'scripts/other.js'), 'utf8')).toBe('a\n');
    expect(fs.readFileSync(path.join(ws, 'scripts/fmtx.js'), 'utf8')).toBe('b\n');
  });

  test("`!node scripts/fmt` with `scripts/` missing: the session's `scripts/fmt.js` is moved and the note says why", async () => {
    const { ws, git, marker } = personsRepo();
    git('config', 'alias.x', '!node scripts/fmt');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`mkdir scripts && ${write('scripts/fmt.js', js(marker))}; ${plant(marker, 'scripts/keep.sh')}; echo tried`);
    await s.close();
    expect(r.output).toMatch(/scripts\/fmt\.js \(named as an interpreter completes/);
    expect(fs.existsSync(path.join(ws, 'scripts/fmt.js'))).toBe(false);
    expect(fs.existsSync(path.join(ws, 'scripts/keep.sh'))).toBe(true);
  });
});

describe("what an interpreter runs, and what is only its script's arguments (the cost of the completion guard)", () => {
  const guard = (alias: string): GuardedGit => {
    const { ws, git } = personsRepo();
    git('config', 'alias.x', alias);
    const g = guardedGit(ws, { system: [], global: [], homes: [] });
    const rel = (ps: string[]): string[] => ps.filter((p) => p.startsWith(`${ws}/`)).map((p) => path.relative(ws, p));
    return { ...g, missing: rel(g.missing), completed: rel(g.completed), readonly: rel(g.readonly) };
  };

  test("`node -r ./setup fmt --fix src`: the loaded file and the script are completed, the script's operands are not", () => {
    const g = guard('!node -r ./setup fmt --fix src');
    expect(g.completed).toEqual(expect.arrayContaining(['setup', 'fmt']));
    expect(g.completed).not.toContain('src');
  });

  test('`cd "$GIT_PREFIX" && python3 -m pytest tests`: the module is a stem anywhere, its operand `tests` is not', () => {
    const g = guard('!cd "$GIT_PREFIX" && python3 -m pytest tests');
    expect(g.anywhereStems).toEqual(['pytest']);
  });

  test('`npx tsx fmt` and `go run gen`: the package bin, and the file after the runner or subcommand', () => {
    expect(guard('!npx tsx fmt').missing).toEqual(expect.arrayContaining(['node_modules/.bin/tsx', 'tsx', 'fmt']));
    expect(guard('!go run gen').completed).toContain('gen');
  });
});

dRoot("kind 3: a completed name's folder filled by the session (the sweep's listing)", () => {
  /** The longest time the worker's event loop was held while `work` ran, ms (perf_hooks' histogram, 10 ms resolution). */
  async function longestBlock(work: () => Promise<void>): Promise<number> {
    const h = monitorEventLoopDelay({ resolution: 10 });
    h.enable();
    try {
      await work();
      return h.max / 1e6;
    } finally {
      h.disable();
    }
  }

  test(
    '25,000 files in `scripts/`: idle sweeps hold the loop briefly; `scripts/fmt.js` among them is moved, and the rest said not checked',
    () =>
      withFmtAlias(async ({ ws, marker, s }) => {
        const r = await s.run(
          `cd scripts && seq -f 'f%06g' 1 25000 | xargs touch && cd .. && ${write('scripts/fmt.js', js(marker))} && echo x > scripts/fmt.weird && echo made`,
        );
        expect(r.output).toContain('made');
        expect(r.output).toContain('scripts/fmt.js (named as an interpreter completes');
        expect(r.output).toMatch(
          /scripts holds more than 20000 entries, so of the names an interpreter completes scripts\/fmt to only fmt\.js, /,
        );
        // Idle: the sweep runs every 250 ms; the folder unchanged, it is not listed again.
        const idle = await longestBlock(() => new Promise((resolve) => setTimeout(resolve, 2_000)));
        console.log(`resolved-names: 25,000 files in the folder, longest block of the loop over 2 idle seconds ${idle.toFixed(0)} ms`);
        expect(idle).toBeLessThan(500);
        hostBash(ws, 'git x');
        const during = ran(marker);
        await s.close();
        expect(during).toBe('not run');
      }),
    120_000,
  );
});
