/**
 * The object audit's bounds at close (src/session/git-objects-audit.ts `OBJECTS_AUDIT_MS`), as an attacker would try
 * them, in real sessions as root: thousands of new packs (each one `git index-pack --verify`) and many forged loose
 * objects in one folder, made to keep close busy past closeSession's 30 s while a forged object of HEAD stays readable.
 * Close must end within the bound, the forged object must be gone, what was not verified must be moved and named, and
 * the person's own objects (a pack and loose objects of theirs at start) must stay readable.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(closeSessions);
afterAll(removeTempDirs);

/** git as the person (root) in `cwd`: its output. */
const gitIn = (cwd: string, ...a: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' });

/** The person's repository at `ws`: a first commit packed by `git gc` (a pack of theirs at start), then run.sh (`echo hello`) committed loose. */
function repoAt(ws: string): void {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  gitIn(ws, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(ws, 'README'), 'the person’s\n');
  gitIn(ws, 'add', 'README');
  gitIn(ws, 'commit', '-qm', 'zero');
  gitIn(ws, 'gc', '-q');
  fs.writeFileSync(path.join(ws, 'run.sh'), 'echo hello\n');
  gitIn(ws, 'add', 'run.sh');
  gitIn(ws, 'commit', '-qm', 'one');
}

/** Shell text: the loose file of HEAD:run.sh (`$o`) replaced by the object `echo PWNED` (round 28's swap). */
const FORGE_LOOSE =
  'o=$(git rev-parse HEAD:run.sh) && e=$(printf "echo PWNED\\n" | git hash-object -w --stdin) && ' +
  'cp .git/objects/${e:0:2}/${e:2} /tmp/f.$$ && rm -f .git/objects/${o:0:2}/${o:2} && cp /tmp/f.$$ .git/objects/${o:0:2}/${o:2} && rm /tmp/f.$$';

/** What the person's git says of the repository: HEAD:run.sh, the first commit's README, and `git fsck`'s verdict. */
function personSees(ws: string): { run: string; readme: string; fsck: number } {
  const fsck = spawnSync('git', ['-C', ws, 'fsck', '--no-dangling'], { encoding: 'utf8' }).status ?? -1;
  return { run: gitIn(ws, 'show', 'HEAD:run.sh'), readme: gitIn(ws, 'show', 'HEAD~1:README'), fsck };
}

describe('kind 3/5: the object audit at close is bounded and leaves nothing unverified in place', () => {
  test('8,000 new packs and a forged loose object of HEAD: close ends within 30 s, the forged object is gone, the packs are moved and named, the person’s pack stays', async () => {
    const ws = fs.realpathSync(tempDir('aj-packs-'));
    repoAt(ws);
    const mine = fs.readdirSync(path.join(ws, '.git/objects/pack')).filter((n) => n.endsWith('.pack'));
    expect(mine).toHaveLength(1);
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000 });
    const r = await s.run(
      'h=$(git rev-parse HEAD | git pack-objects .git/objects/pack/tmp) && ' +
        `python3 -c 'import os,sys;d=".git/objects/pack/";[os.link(d+"tmp-"+sys.argv[1]+e,d+"pack-%040x"%i+e) for i in range(1,8001) for e in (".pack",".idx")]' "$h" && ` +
        `rm .git/objects/pack/tmp-* && ${FORGE_LOOSE} && git show HEAD:run.sh`,
    );
    expect(r.output).toBe('echo PWNED\n');
    const started = Date.now();
    await s.close();
    const tookMs = Date.now() - started;
    expect(personSees(ws)).toEqual({ run: 'echo hello\n', readme: 'the person’s\n', fsck: 0 });
    expect(tookMs).toBeLessThan(30_000);
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.movedTo ?? 'NOT MOVED'} (${f.why})`).join('\n');
    expect(atClose).toMatch(/HEAD:run\.sh/);
    // Every new pack is gone from objects/pack (verified ones may stay: none of these is forged), the person's is there.
    const left = fs.readdirSync(path.join(ws, '.git/objects/pack'));
    expect(left).toEqual(expect.arrayContaining([mine[0]!, mine[0]!.replace(/\.pack$/, '.idx')]));
    const unverified = 8000 - (left.filter((n) => n.endsWith('.idx')).length - 1);
    if (unverified > 0) expect(atClose).toMatch(/NOT verified within the object audit's bounds/);
    expect(atClose).not.toMatch(/NOT MOVED/);
  }, 400_000);

  test('forty forged loose objects in the folder of HEAD:run.sh’s id: none stays readable, the person’s other loose objects do', async () => {
    const ws = fs.realpathSync(tempDir('aj-loose-'));
    repoAt(ws);
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000 });
    // Forty files named as objects of that folder that hold other objects (one copy of the PWNED object each), then the swap itself.
    const r = await s.run(
      `${FORGE_LOOSE} && f=.git/objects/\${o:0:2} && for i in $(seq 1 40); do n=$(printf '%038x' $i); cp $f/\${o:2} $f/$n; done && git show HEAD:run.sh`,
    );
    expect(r.output).toBe('echo PWNED\n');
    await s.close();
    expect(personSees(ws)).toEqual({ run: 'echo hello\n', readme: 'the person’s\n', fsck: 0 });
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.movedTo ?? 'NOT MOVED'} (${f.why})`).join('\n');
    expect(atClose).not.toMatch(/NOT MOVED/);
    expect(atClose).toMatch(/holds object|NOT verified within the object audit's bounds/);
  }, 200_000);
});
