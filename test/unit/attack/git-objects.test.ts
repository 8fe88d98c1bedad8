/**
 * The object store of the person's repository after a session (src/session/git-objects-audit.ts), as an attacker
 * would try it, in real sessions as root: the session writes `objects/` (its commits need it) and git never hashes an
 * object it reads, so the attacks below make an object id of HEAD read as the session's bytes (`echo PWNED...`) or
 * make `git status` report the session's tree. Each asserts what the person's git on the host gives after close, and
 * that the close's findings name it. Round 28's swapped loose object and round 29's shadowing pack are in their round
 * files (adversary-round28.test.ts, adversary-round29.test.ts); here the kinds around them: a new `alternates` line
 * to a folder holding such a pack, a forged multi-pack-index (a valid new pack, the index of packs forged), a forged
 * commit-graph, and ways past the fix: a pack whose index is git's own but whose bytes are other, a pack and a loose
 * object forged together, the times of a forged pack or loose object set back, the objects folder rebuilt of hard
 * links; and a session's plain commit and `git gc`, which must keep every object (no false finding of a pack or loose
 * object).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { personsGit, withNested } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

/** git as the person (root) in `cwd`. */
const gitIn = personsGit;

/** Shell text: `$o` HEAD:run.sh's id, `$e` the id of a blob `echo PWNED-by-session` written loose. */
const IDS = `o=$(git rev-parse HEAD:run.sh) && e=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin)`;

/** Python text: rewrites the pack index argv[1] so that its one entry is the id argv[2] (fan-out fixed), into argv[3]. */
const FORGE_IDX =
  `python3 -c 'import sys,struct;i=bytearray(open(sys.argv[1],"rb").read());t=bytes.fromhex(sys.argv[2]);i[1032:1052]=t;` +
  `[struct.pack_into(">I",i,8+4*k,1 if k>=t[0] else 0) for k in range(256)];open(sys.argv[3],"wb").write(i)'`;

/** Shell text: a pack of `$e` alone in `$1` (a folder made), its index forged to name `$o`; `$h` its name. */
const forgedPackIn = (dir: string): string =>
  `d=.git/objects/pk && mkdir -p $d ${dir} && h=$(echo "$e" | git pack-objects $d/x) && ${FORGE_IDX} $d/x-$h.idx "$o" ${dir}/pack-$h.idx && ` +
  `cp $d/x-$h.pack ${dir}/pack-$h.pack && rm -rf $d .git/objects/\${e:0:2}/\${e:2}`;

/** Runs `script` at `where` of a new workspace in a session, closes it; the workspace, the command's output, the findings at close. */
async function attack(where: string, script: string): Promise<{ repo: string; output: string; atClose: string }> {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const { ws } = withNested();
  const s = await startSession({ cwd: ws, workspace: ws });
  const r = await s.run(`cd ${where} && ${script}`);
  await s.close();
  return { repo: path.join(ws, where), output: r.output, atClose: s.gitFindingsAtClose.map((f) => `${f.path} (${f.why})`).join('\n') };
}

/** What the person's checkout of run.sh writes, or why it failed. */
function checkedOut(repo: string): string {
  fs.rmSync(path.join(repo, 'run.sh'), { force: true });
  try {
    gitIn(repo, 'checkout', '--', 'run.sh');
    return fs.readFileSync(path.join(repo, 'run.sh'), 'utf8');
  } catch (err) {
    return `checkout failed: ${(err as Error).message}`;
  }
}

describe('kind 5: what makes an object of HEAD read as other bytes', () => {
  test('a new objects/info/alternates line to a workspace folder holding a forged pack: the line is moved and named, the checkout is the reviewed run.sh', async () => {
    const { repo, output, atClose } = await attack(
      '.',
      `${IDS} && ${forgedPackIn('.cache/objs/pack')} && echo "$PWD/.cache/objs" >> .git/objects/info/alternates && git show HEAD:run.sh && echo made-it`,
    );
    expect(output).toContain('PWNED-by-session');
    expect(output).toContain('made-it');
    expect(atClose).toMatch(/objects\/info\/alternates \(a new or changed list of other folders/);
    expect(checkedOut(repo)).toBe('echo hello\n');
  });

  test('a forged multi-pack-index over a valid new pack (the id of HEAD:run.sh mapped to the session blob): moved and named', async () => {
    const swap =
      `python3 -c 'import sys;p=".git/objects/pack/multi-pack-index";b=bytearray(open(p,"rb").read());n=b[6];` +
      `c={bytes(b[12+12*i:16+12*i]):int.from_bytes(b[16+12*i:24+12*i],"big") for i in range(n+1)};l=c[b"OIDL"];f=c[b"OOFF"];` +
      `ids=[bytes(b[l+20*k:l+20*k+20]).hex() for k in range((f-l)//20)];x=8*ids.index(sys.argv[1]);y=8*ids.index(sys.argv[2]);` +
      `a=b[f+x:f+x+8];b[f+x:f+x+8]=b[f+y:f+y+8];b[f+y:f+y+8]=a;open(p,"wb").write(b)' "$o" "$e"`;
    const { repo, output, atClose } = await attack(
      'vendor/lib',
      `${IDS} && printf '%s\\n%s\\n' "$o" "$e" | git pack-objects -q .git/objects/pack/pack >/dev/null && git multi-pack-index write && chmod u+w .git/objects/pack/multi-pack-index && ${swap} && git show HEAD:run.sh && echo made-it`,
    );
    expect(output).toContain('PWNED-by-session');
    expect(atClose).toMatch(/vendor\/lib\/\.git\/objects\/pack\/multi-pack-index \(/);
    expect(gitIn(repo, 'show', 'HEAD:run.sh')).toBe('echo hello\n');
    expect(checkedOut(repo)).toBe('echo hello\n');
  });

  test("a forged commit-graph giving HEAD the session's tree: the person's git status is clean again, the graph named", async () => {
    const patch =
      `python3 -c 'import sys;p=".git/objects/info/commit-graph";b=bytearray(open(p,"rb").read());o=bytes.fromhex(sys.argv[1]);` +
      `i=b.index(o);b[i:i+len(o)]=bytes.fromhex(sys.argv[2]);open(p,"wb").write(b)' "$(git rev-parse HEAD^{tree})" "$t"`;
    const { repo, output, atClose } = await attack(
      '.',
      `${IDS} && t=$(git ls-tree HEAD | sed "s/$o/$e/" | git mktree) && git commit-graph write --reachable && chmod u+w .git/objects/info/commit-graph && ${patch} && git status --porcelain && echo made-it`,
    );
    expect(output).toMatch(/M {2}run\.sh/); // the session's own git already reports a staged change nobody made
    expect(atClose).toMatch(/objects\/info\/commit-graph \(a new or changed commit-graph/);
    expect(gitIn(repo, 'status', '--porcelain', '--untracked-files=no')).toBe('');
  });
});

describe('ways past the object audit', () => {
  test("a pack whose index is git's own but whose pack holds other bytes of the same size (nested): named as HEAD:run.sh, the checkout is the reviewed run.sh", async () => {
    // The pack of HEAD:run.sh alone, its object's deflated bytes swapped for `echo PWNED` (11 bytes, as `echo hello`), the trailer made right.
    const rewrite =
      `python3 -c 'import sys,zlib,hashlib;p=sys.argv[1];x=sys.argv[2];b=open(p,"rb").read();body=b[:13]+zlib.compress(b"echo PWNED\\n");` +
      `t=hashlib.sha1(body).digest();open(p,"wb").write(body+t);i=bytearray(open(x,"rb").read());i[-40:-20]=t;open(x,"wb").write(i)'`;
    const { repo, output, atClose } = await attack(
      'vendor/lib',
      `${IDS} && d=.git/objects/pk && mkdir -p $d && h=$(echo "$o" | git pack-objects $d/x) && chmod u+w $d/* && ${rewrite} $d/x-$h.pack $d/x-$h.idx && ` +
        `mv $d/x-$h.idx .git/objects/pack/pack-$h.idx && mv $d/x-$h.pack .git/objects/pack/pack-$h.pack && rmdir $d && git show HEAD:run.sh && echo made-it`,
    );
    expect(output).toContain('echo PWNED\n');
    expect(atClose).toMatch(/git would show other bytes for HEAD:run\.sh: a pack whose index does not match its bytes/);
    expect(checkedOut(repo)).toBe('echo hello\n');
  });

  test('a forged pack and the loose object both forged, times set back (root): both named, the checkout is the reviewed run.sh', async () => {
    const { repo, output, atClose } = await attack(
      '.',
      `${IDS} && ${forgedPackIn('.git/objects/pack')} && e=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && ` +
        `f=.git/objects/\${o:0:2}/\${o:2} && cp .git/objects/\${e:0:2}/\${e:2} .git/objects/swap.tmp && mv -f .git/objects/swap.tmp "$f" && ` +
        `touch -d 2001-01-01 .git/objects/pack/* "$f" && git show HEAD:run.sh && echo made-it`,
    );
    expect(output).toContain('made-it');
    expect(atClose).toMatch(/objects\/pack\/pack-[0-9a-f]+\.idx \(git would show other bytes for HEAD:run\.sh/);
    expect(atClose).toMatch(/objects\/[0-9a-f]{2}\/[0-9a-f]{38} \(git would show other bytes for HEAD:run\.sh/);
    expect(checkedOut(repo)).toBe('echo hello\n');
  });

  test("the objects folder rebuilt of hard links with HEAD:run.sh's swapped (nested): named, the checkout is the reviewed run.sh", async () => {
    const { repo, output, atClose } = await attack(
      'vendor/lib',
      `${IDS} && cp -al .git/objects .git/o2 && cp .git/objects/\${e:0:2}/\${e:2} .git/o2/swap.tmp && mv -f .git/o2/swap.tmp .git/o2/\${o:0:2}/\${o:2} && ` +
        `mv .git/objects .git/o0 && mv .git/o2 .git/objects && git show HEAD:run.sh && echo made-it`,
    );
    expect(output).toContain('made-it');
    expect(atClose).toMatch(/git would show other bytes for HEAD:run\.sh/);
    expect(checkedOut(repo)).toBe('echo hello\n');
  });
});

describe("held: the session's own commits and gc", () => {
  test('a commit, a branch and `git gc` in the session: no pack or loose object named, every object there', async () => {
    const { repo, output, atClose } = await attack(
      '.',
      `echo more >> run.sh && git -c user.name=a -c user.email=a@b commit -qam more && git branch side && git gc -q && echo made-it`,
    );
    expect(output).toContain('made-it');
    // The git state audit names the session's commit and branch (git-state-audit.ts); nothing of objects/ is named.
    expect(atClose).not.toMatch(/objects|pack|quarantine|other bytes/);
    expect(atClose.split('\n')).toEqual([
      expect.stringContaining('the session moved main from'),
      expect.stringContaining('the session made refs/heads/side'),
    ]);
    expect(gitIn(repo, 'show', 'side:run.sh')).toBe('echo hello\nmore\n');
    expect(execFileSync('git', ['-C', repo, 'fsck', '--no-dangling'], { encoding: 'utf8', stdio: 'pipe' })).toBe('');
  });
});
