/**
 * The git audit's part on what the person's review reads (adversary round 24): docs/security.md asks the person to
 * look at `git status` before pushing, and a session can make that review read a clean tree while the files are its
 * own. The index is the session's to write (`git add` needs it), so it can
 *
 * - set the skip-worktree or assume-unchanged bit of an entry (`git update-index --skip-worktree Makefile`): git
 *   status and git diff no longer look at the file;
 * - with no bit at all, write into the index the stat data of a file it replaced (ctime, mtime, device, inode, uid,
 *   gid, size; the object id kept): git takes the file for the committed one without reading it;
 * - drop in an untracked cache or fsmonitor extension of its own that says nothing changed;
 * - after `git add`, rewrite the index's cache-tree (`TREE` extension) to say a folder is HEAD's tree of it: git status
 *   and git diff skip the folder (adversary round 25);
 * - with no git command, write an ignore file that ignores itself and what it hides (`tests/.gitignore` holding
 *   `.gitignore` and `conftest.py`);
 * - and put code the person runs where their own rules ignore it (adversary round 25): a `__pycache__/app.*.pyc`
 *   whose header claims `app.py`'s mtime and size (Python runs it instead of the reviewed source), a
 *   `node_modules/.bin` program, a `.pth` file or `bin/activate` in `.venv`.
 *
 * {@link recordIndex} notes at session start which entries carry those bits, which extensions the index has, the
 * lines of the ignore files git reads (tracked `.gitignore` files, `info/exclude`, the person's excludes file) and the
 * start time. {@link auditIndex}, run by git-audit.ts's `auditGit` after each command and edit and at close, then
 * (1) clears the bits the session set; (2) for each entry whose file's ctime is after the start (a ctime cannot be set
 * back without the clock: no process of the session can), whose stat data git would trust (same mtime second and size)
 * and whose content is not the entry's object (hashed here, as git hashes a blob; a CRLF copy of it counts as the
 * same), re-inserts the entry with empty stat data (`git update-index --index-info`), so that git compares the content
 * again; (3) drops an untracked cache or fsmonitor extension; (5) lists what is staged without the cache-tree (HEAD's
 * tree whole against the entries) and, for each staged path `git diff-index --cached` does not name, writes its entry
 * again, which invalidates the cache-tree on its path; (4) reads every untracked file and folder git ignores
 * (ignored-walk.ts, a worker thread within an entry cap and a time budget, started first so that it runs meanwhile),
 * removes the Python bytecode the session wrote there (Python writes it again from the source), and names each other
 * entry whose ctime is after the start with the rule that ignores it (`git check-ignore -v` gives each rule's file and
 * line; a rule is the session's when its file changed during the session and the line was not in it at start, else
 * the person's); what it did not read is named as not fully checked. Each is a finding that names the path (past
 * {@link MAX_NAMED_IN_ROOT} in one ignored folder, the folder with a count), in the command's result and the close
 * note; what (4) names is left in place (nothing of the person's is lost) and told once per change.
 *
 * The same runs in each repository nested in the workspace at start (adversary round 26: a submodule, a clone of its
 * own; git-audit.ts finds them): the person's `git status` at the top shows a submodule as one line at most (none under
 * `submodule.<name>.ignore` or `diff.ignoreSubmodules`) and lists none of its ignored files. Each gets (1), (2), (3)
 * and (5) on its own index, its ignored files are read in the same walk as the top's (one bound for all), and what the
 * session changed in it is named ({@link changedFindings}).
 *
 * Its git runs as the workspace's owner (worktree-git.ts), with no system or global config, no hook, no fsmonitor
 * (worktree-git.ts `NO_REPO_CODE`), and reads no content: the hashes are the worker's (so no filter driver of a
 * nested repository's config runs). Attack tests: adversary-round24.test.ts, index-audit.test.ts,
 * ignored-audit.test.ts, nested-audit.test.ts.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeName, nameBytes, showName } from './git-walk';
import { hostGitConfig } from './host-git-config';
import { IGNORED_WALK_LIMITS, IGNORED_WALK_LIMITS_AT_CLOSE, walkIgnored, type FreshEntry, type GitIgnoredWalk } from './ignored-walk';
import { MINIMAL_ENV } from './identity';
import { readRegular, readRegularIfThere } from './safe-open';
import { NO_REPO_CODE, type Runner } from './worktree-git';

/** What {@link recordIndex} noted at session start. */
export interface IndexBaseline {
  readonly workspace: string;
  /** The root git dir (absolute). */
  readonly git: string;
  /**
   * Wall-clock ms from which a file's ctime counts as the session's: when the baseline was taken, after the workspace's
   * ACL grant (workspace.ts `grantWorkspace`, which sets every file's ctime) and before bash starts. The kernel stamps
   * ctimes with a clock up to a tick (4 to 10 ms) behind Node's, and the session's first write comes after bash's
   * spawn, tens of ms later: no slack is needed, and none is taken, or every granted file would count.
   */
  readonly since: number;
  /** Paths whose entry carried the skip-worktree bit at start (a sparse checkout's): left alone. */
  readonly skipAt: ReadonlySet<string>;
  /** Paths whose entry carried the assume-unchanged bit at start: left alone. */
  readonly assumeAt: ReadonlySet<string>;
  /** Whether the index had an untracked cache or an fsmonitor extension at start (then dropping one is no finding). */
  readonly extensionsAt: boolean;
  /** The lines of each ignore file git read at start (absolute path → lines), as far as {@link MAX_IGNORE_BYTES} goes. */
  readonly ignoreLines: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * The person's excludes file (`core.excludesFile` of their system or global config, else git's default), absolute,
   * handed to the audit's git; undefined when the repository's config names its own (which its git reads anyway).
   */
  readonly excludesFile: string | undefined;
  /** Who the audit's git runs as. */
  readonly runner: Runner;
  /** What (4) named already: path → ctime ms then (told again when it changes). */
  readonly told: Map<string, number>;
  /** (4)'s state: folders whose last change was the audit's own removal of bytecode (path → ctime ms), and whether a walk that stopped short was told. */
  readonly ignored: { ours: Map<string, number>; partialTold: boolean };
  /** Entries (2) hashed and found to hold their object: path → `ctime ns:oid`, not hashed again while both stay. */
  readonly verified: Map<string, string>;
  /** The index file and HEAD's tree when (5) last found the cache-tree true (`ino:size:ctime ns:tree`): not checked again while they stay. */
  readonly cacheTree: { checked?: string };
  /**
   * The index as the last audit that wrote nothing read it: its {@link indexStamp}, its entries and whether it may hold a
   * cache extension; read again once the index file changes.
   */
  readonly lastRead: { stamp?: string; entries?: readonly Entry[]; extension?: boolean };
  /** The repositories nested in the workspace at start, each audited as this one is ({@link NestedBaseline}); none in a nested one's own. */
  readonly nested: readonly NestedBaseline[];
  /** For a nested repository's baseline: the workspace it lies in, which the findings' words name paths from (its rule files). */
  readonly top?: string;
  /** Nested repositories not audited (past {@link MAX_NESTED_REPOS}, or their index unreadable at start): path → why; named once, and at close. */
  readonly nestedLeft: { readonly which: ReadonlyMap<string, string>; told: boolean };
}

/**
 * A repository nested in the workspace at session start (a submodule, a vendored clone with a `.git` of its own), as
 * git-audit.ts finds it: its work tree (absolute) and its git dir (absolute, a `.git` file followed).
 */
export interface NestedRepo {
  readonly worktree: string;
  readonly git: string;
}

/**
 * What {@link recordIndex} noted of a nested repository: its own baseline (its index, ignore files), its path from the
 * workspace's root, and its changes at start ({@link changedKeys}), which are the person's and not named.
 */
interface NestedBaseline {
  readonly base: IndexBaseline;
  /** Its work tree relative to the workspace (names as git-walk.ts `decodeName` gives them). */
  readonly rel: string;
  readonly changedAt: ReadonlySet<string>;
  /**
   * The files of its HEAD's tree at start (path → `<mode> <oid>`, {@link headFiles}; empty when HEAD was unborn): what
   * is staged or committed since is found against them, without the cache-tree, so a commit the session made in it
   * (which the top's git status hides under `ignore = all`) counts too.
   */
  readonly filesAt: ReadonlyMap<string, string>;
  /** What {@link changedFindings} named already: key → ctime ms then (told again when it changes). */
  readonly told: Map<string, number>;
}

/** One finding of this audit: the path (absolute) and what was wrong and done. */
export interface IndexFinding {
  readonly path: string;
  readonly why: string;
  /**
   * `shown`: git sees it again (bit cleared, stat data cleared, cache dropped); `ignored`: under a rule the session
   * wrote, named, left; `unlisted`: made or changed by the session under the person's own ignore rules, named, left;
   * `nested`: changed by the session in a repository nested in the workspace (which the person's `git status` at the
   * top may not show: `submodule.<name>.ignore`, `diff.ignoreSubmodules`), named, left;
   * `removed`: Python bytecode the session wrote, removed; `failed`: could not be shown; `partial`: ignored files not
   * fully read; `unchecked`: a part of the audit that could not run.
   */
  readonly kind: 'shown' | 'ignored' | 'unlisted' | 'nested' | 'removed' | 'failed' | 'partial' | 'unchecked';
}

/** Longest one git call of this audit may take, ms (a FIFO put where git opens a file would hold it). */
const GIT_TIMEOUT_MS = 10_000;

/** Bytes one audit hashes at most; a file past them whose stat data git trusts has them cleared unhashed, and git compares it. */
const MAX_HASHED_BYTES = 256 << 20;

/** Files up to this size (bytes, by lstat) are read in one synchronous read. */
const SMALL_FILE_BYTES = 256 << 10;

/** The largest file whose CRLF-to-LF copy is hashed too (held in memory), bytes. */
const MAX_CRLF_BYTES = 4 << 20;

/** Bytes of ignore files {@link recordIndex} keeps, in all. */
const MAX_IGNORE_BYTES = 8 << 20;

/**
 * Most entries an audit reads from the index (its header's count): a session can stage millions of entries with no
 * file behind them (`update-index --index-info`), and reading them held the worker's event loop for seconds after
 * every command (adversary round 25). Past it the index is named as not checked, and the person's own `git status`
 * shows those entries. A repository of Chromium's size (about 450,000 files) is within it.
 */
const MAX_INDEX_ENTRIES = 1_000_000;

/** Yield to the event loop after this many entries or lines of git's output parsed. */
const YIELD_LINES = 4096;

/** Yield to the event loop after this many files stat'ed or hashed. */
const YIELD_EVERY = 256;

/** And after this many bytes hashed. */
const YIELD_BYTES = 8 << 20;

/** One entry of the index, as `git ls-files -s -v --debug` prints it. */
interface Entry {
  /** `H`, `S` (skip-worktree), lowercase when assume-unchanged, … (git-ls-files `-v`). */
  tag: string;
  mode: string;
  oid: string;
  stage: string;
  path: string;
  mtimeSec: number;
  size: number;
  /** The entry's flags word (`--debug`'s `flags:`, hex): intent-to-add is bit 29. */
  flags: number;
}

/**
 * Runs the audit's git in `workspace` (`GIT_DIR` `git`) with `args`, stdin `input`; resolves with stdout (bytes), also
 * when git exits 1 and `oneIsNone` (check-ignore's "nothing matched", config's "not set").
 * @throws Error with git's first line of stderr, or the timeout
 */
function runGit(
  b: Pick<IndexBaseline, 'workspace' | 'git' | 'runner'>,
  args: string[],
  input?: Buffer,
  oneIsNone = false,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      ['-c', 'safe.directory=*', ...NO_REPO_CODE, ...args],
      {
        cwd: b.workspace,
        env: {
          ...MINIMAL_ENV,
          GIT_DIR: b.git,
          GIT_WORK_TREE: b.workspace,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
          GIT_OPTIONAL_LOCKS: '0',
        },
        timeout: GIT_TIMEOUT_MS,
        encoding: 'buffer',
        maxBuffer: 512 << 20,
        ...b.runner,
      },
      (err, stdout, stderr) => {
        if (!err || (oneIsNone && err.code === 1)) return resolve(stdout);
        const line =
          stderr
            .toString('utf8')
            .split('\n')
            .find((l) => l.trim() !== '') ?? err.message;
        reject(new Error(line.trim()));
      },
    );
    // git may exit before reading its input (a failure, or a command that reads none): EPIPE is no error of ours.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });
}

/** The index's entries (`git ls-files -z -s -v --debug`; names as git-walk.ts `decodeName` gives them). */
async function readEntries(b: Pick<IndexBaseline, 'workspace' | 'git' | 'runner'>): Promise<Entry[]> {
  const out = await runGit(b, ['ls-files', '-z', '-s', '-v', '--debug']);
  const entries: Entry[] = [];
  let at = 0;
  for (let n = 1; at < out.length; n++) {
    if (n % YIELD_LINES === 0) await new Promise((r) => setImmediate(r));
    const nul = out.indexOf(0, at);
    if (nul < 0) break;
    const head = out.subarray(at, nul);
    const tab = head.indexOf(0x09);
    const m = /^(\S) (\d+) ([0-9a-f]+) (\d)$/.exec(head.subarray(0, tab).toString('latin1'));
    // Five lines of stat data follow each name (ctime, mtime, dev/ino, uid/gid, size/flags).
    let end = nul + 1;
    for (let i = 0; i < 5 && end <= out.length; i++) end = out.indexOf(0x0a, end) + 1 || out.length + 1;
    const debug = out.subarray(nul + 1, Math.min(end, out.length)).toString('latin1');
    at = end;
    if (!m || tab < 0) continue;
    entries.push({
      tag: m[1]!,
      mode: m[2]!,
      oid: m[3]!,
      stage: m[4]!,
      path: decodeName(head.subarray(tab + 1)),
      mtimeSec: Number(/mtime: (\d+):/.exec(debug)?.[1] ?? -1),
      size: Number(/size: (\d+)/.exec(debug)?.[1] ?? -1),
      flags: parseInt(/flags: ([0-9a-f]+)/.exec(debug)?.[1] ?? '0', 16),
    });
  }
  return entries;
}

/** The index file's identity (`ino:size:ctime ns:mtime ns`: a write changes its ctime, which no process of the session can set back), or undefined. */
function indexStamp(git: string): string | undefined {
  const st = fs.statSync(path.join(git, 'index'), { bigint: true, throwIfNoEntry: false });
  return st ? `${st.ino}:${st.size}:${st.ctimeNs}:${st.mtimeNs}` : undefined;
}

/** The entry count in the header of the index file `file` (bytes 8 to 12), or undefined when it has no index header. */
function headerCount(file: string): number | undefined {
  try {
    const r = readRegularIfThere(file, 12, false);
    return r && r.bytes.length === 12 && r.bytes.toString('latin1', 0, 4) === 'DIRC' ? r.bytes.readUInt32BE(8) : undefined;
  } catch {
    return undefined;
  }
}

const isAssumed = (e: Entry): boolean => e.tag !== e.tag.toUpperCase();
const isSkipped = (e: Entry): boolean => e.tag.toUpperCase() === 'S';

/** Whether the index file `file` may hold an untracked cache (`UNTR`) or fsmonitor (`FSMN`) extension: a loose match. */
function hasCacheExtension(file: string): boolean {
  try {
    const r = readRegularIfThere(file, 512 << 20, false);
    return r !== undefined && (r.bytes.includes('UNTR') || r.bytes.includes('FSMN'));
  } catch {
    return true;
  }
}

/**
 * The person's excludes file: the last `core.excludesFile` of their system and global configs (host-git-config.ts),
 * else `<home>/.config/git/ignore`; undefined when none can be told. Read with `git config --file`, includes followed.
 */
function personsExcludesFile(workspace: string): string | undefined {
  let owner: number;
  try {
    owner = fs.statSync(workspace).uid;
  } catch {
    return undefined;
  }
  const host = hostGitConfig(owner);
  let found: string | undefined;
  for (const file of [...host.system, ...host.global]) {
    if (!fs.existsSync(file)) continue;
    try {
      const v = execFileSync('git', ['config', '--file', file, '--includes', '--path', '--get', 'core.excludesFile'], {
        env: { ...MINIMAL_ENV, HOME: host.homes[0] ?? '/' },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: GIT_TIMEOUT_MS,
      }).trim();
      if (v !== '') found = path.resolve(path.dirname(file), v);
    } catch {
      /* not set there */
    }
  }
  return found ?? (host.homes[0] !== undefined ? path.join(host.homes[0], '.config', 'git', 'ignore') : undefined);
}

/**
 * What the index and the ignore files hold at session start, for {@link auditIndex}; undefined when git cannot read the index
 * then (the person's git cannot either; this part of the audit is then off for the session). `runner`: who the audit's
 * git runs as (worktree-git.ts `ownerOf`). Call after the workspace's ACL grant, before bash starts ({@link IndexBaseline.since}).
 */
export async function recordIndex(
  workspace: string,
  git: string,
  runner: Runner,
  nested: readonly NestedRepo[] = [],
): Promise<IndexBaseline | undefined> {
  const b = { workspace, git, runner };
  let entries: Entry[];
  try {
    entries = await readEntries(b);
  } catch {
    return undefined;
  }
  // The repository's own core.excludesFile (its config is read-only in the sandbox) wins over the person's, as for their git.
  const own = (await runGit(b, ['config', '--path', '--get', 'core.excludesFile'], undefined, true).catch(() => Buffer.alloc(0)))
    .toString('utf8')
    .trim();
  const excludesFile = own !== '' ? undefined : personsExcludesFile(workspace);
  const ignoreLines = new Map<string, Set<string>>();
  let bytes = 0;
  const files = [
    path.join(git, 'info', 'exclude'),
    ...(excludesFile ? [excludesFile] : []),
    ...(own !== '' ? [path.resolve(workspace, own)] : []),
    ...entries.filter((e) => path.basename(e.path) === '.gitignore').map((e) => path.join(workspace, e.path)),
  ];
  for (const file of files) {
    try {
      const r = readRegularIfThere(file, 1 << 20, false);
      if (!r || r.truncated || (bytes += r.bytes.length) > MAX_IGNORE_BYTES) continue;
      ignoreLines.set(file, new Set(r.bytes.toString('utf8').split('\n').map(ruleText)));
    } catch {
      /* unreadable: its rules count as new if it changes */
    }
  }
  const inner = await recordNested(workspace, runner, nested);
  return {
    ...b,
    ...inner,
    since: Date.now(),
    skipAt: new Set(entries.filter(isSkipped).map((e) => e.path)),
    assumeAt: new Set(entries.filter(isAssumed).map((e) => e.path)),
    extensionsAt: hasCacheExtension(path.join(git, 'index')),
    ignoreLines,
    excludesFile,
    told: new Map(),
    ignored: { ours: new Map(), partialTold: false },
    verified: new Map(),
    cacheTree: {},
    lastRead: {},
  };
}

/** One change in a nested repository against its index or its HEAD's tree at start, as {@link changedKeys} lists it. */
interface Change {
  /** Path relative to the repository's work tree (names as git-walk.ts `decodeName` gives them). */
  readonly rel: string;
  /**
   * `worktree`: the file differs from its index entry by stat (its content is hashed before it is named); `staged`: the
   * index differs from HEAD's tree at start (staged, or committed since); `untracked`: in neither, and not ignored.
   */
  readonly where: 'worktree' | 'staged' | 'untracked';
  /** git's status letter (`M`, `A`, `D`, `T`; `?` for untracked). */
  readonly status: string;
  /** For `worktree`: the index entry's mode and object id. */
  readonly entry?: Pick<Entry, 'mode' | 'oid'>;
}

/**
 * What differs in `b`'s repository from its index, and its index from `filesAt` (its HEAD's tree at start), by key (the
 * same change gives the same key; a staged one's names its object): `git diff-files` and `git ls-files -o
 * --exclude-standard`, plumbing that reads no file's content through git (so no filter driver of the repository's
 * config runs as the owner), and the index's entries against `filesAt` ({@link stagedPaths}, no cache-tree trusted).
 * Commits of repositories nested in it are left out: each is audited on its own.
 * @throws Error past {@link MAX_INDEX_ENTRIES} paths, or git's
 */
async function changedKeys(b: IndexBaseline, filesAt: ReadonlyMap<string, string>): Promise<Map<string, Change>> {
  const out = new Map<string, Change>();
  const f = split0(await runGit(b, ['diff-files', '--raw', '-z', '--no-renames', '--ignore-submodules=all']));
  for (let i = 0; i + 1 < f.length; i += 2) {
    if (i % YIELD_LINES === 0) await new Promise((r) => setImmediate(r));
    // `:<mode> <mode> <oid> <oid> <status>`, then the path.
    const m = /^:(\d+) (\d+) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])/.exec(f[i]!.toString('latin1'));
    if (!m || m[1] === '160000' || m[2] === '160000') continue;
    const rel = decodeName(f[i + 1]!);
    out.set(`worktree ${m[5]} ${rel}`, { rel, where: 'worktree', status: m[5]!, entry: { mode: m[1]!, oid: m[3]! } });
  }
  // The entries as the audit's parts (1) to (5) just read them, while the index file has not changed since.
  const same = b.lastRead.stamp !== undefined && b.lastRead.stamp === indexStamp(b.git) && b.lastRead.entries !== undefined;
  const { staged, inIndex } = await stagedPaths(filesAt, same ? [...b.lastRead.entries!] : await readEntries(b));
  for (const rel of staged) {
    const e = inIndex.get(rel);
    if (e?.mode === '160000' || filesAt.get(rel)?.startsWith('160000 ')) continue;
    const status = e === undefined ? 'D' : filesAt.has(rel) ? 'M' : 'A';
    out.set(`staged ${e ? `${e.mode} ${e.oid}` : 'gone'} ${rel}`, { rel, where: 'staged', status });
  }
  const cfg = b.excludesFile ? ['-c', `core.excludesFile=${b.excludesFile}`] : [];
  const others = split0(await runGit(b, [...cfg, 'ls-files', '-z', '--others', '--exclude-standard']));
  if (out.size + others.length > MAX_INDEX_ENTRIES) throw new Error(`more than ${MAX_INDEX_ENTRIES} changed or untracked paths`);
  for (const name of others) {
    const rel = decodeName(name);
    out.set(`untracked ${rel}`, { rel, where: 'untracked', status: '?' });
  }
  return out;
}

/**
 * What the session changed in the nested repository `n` since the start: each change {@link changedKeys} lists that
 * was not there at start, or whose file's ctime is after the start, and (for a changed file) whose content is not its
 * index entry's object (hashed here); named once per change and ctime, all again at close; past
 * {@link MAX_NAMED_IN_ROOT}, one finding counts them.
 */
async function changedFindings(n: NestedBaseline, final: boolean): Promise<IndexFinding[]> {
  const b = n.base;
  const budget = { left: MAX_HASHED_BYTES };
  const found: { rel: string; c: Change }[] = [];
  let count = 0;
  for (const [key, c] of await changedKeys(b, n.filesAt)) {
    if (++count % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    const abs = path.join(b.workspace, c.rel);
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(nameBytes(abs), { throwIfNoEntry: false });
    } catch {
      st = undefined;
    }
    const fresh = st !== undefined && st.ctimeMs >= b.since;
    if (n.changedAt.has(key) && (c.where === 'staged' || !fresh)) continue;
    const ctime = c.where === 'staged' ? 0 : (st?.ctimeMs ?? -1);
    if (!final && n.told.get(key) === ctime) continue;
    // A file only touched (its stat changed, not its content) is no change.
    if (c.entry && c.status === 'M' && st && (await sameContent(abs, c.entry as Entry, st.size, budget)) === true) continue;
    n.told.set(key, ctime);
    found.push({ rel: c.rel, c });
  }
  if (found.length === 0) return [];
  const where = `in the repository nested at ${showName(n.rel)}, which git status at the top does not list file by file (review it with \`git -C ${showName(n.rel)} status\`)`;
  const what = (c: Change): string =>
    c.where === 'untracked'
      ? 'made by the session, untracked'
      : c.where === 'staged'
        ? 'staged or committed by the session'
        : c.status === 'D'
          ? 'deleted by the session'
          : 'changed by the session';
  if (found.length <= MAX_NAMED_IN_ROOT)
    return found.map((f) => ({ path: path.join(b.workspace, f.rel), why: `${what(f.c)} ${where}`, kind: 'nested' }));
  const some = found.slice(0, 3).map((f) => showName(f.rel));
  return [
    {
      path: b.workspace,
      why: `${found.length} files made, changed or staged by the session (${some.join(', ')}, …) ${where}`,
      kind: 'nested',
    },
  ];
}

/** A line of an ignore file as `git check-ignore -v` gives its pattern: trailing CR and blanks dropped. */
const ruleText = (line: string): string => line.replace(/[\r ]+$/, '');

/** Nested repositories audited at most (each costs a few git calls per audit); past them each is named as not checked. */
const MAX_NESTED_REPOS = 32;

/** The files of `b`'s HEAD's tree (none when HEAD is unborn) and what differs from them and its index, at start. */
async function changesAt(b: IndexBaseline): Promise<Pick<NestedBaseline, 'filesAt' | 'changedAt'>> {
  const head = (await runGit(b, ['rev-parse', '-q', '--verify', 'HEAD^{tree}'], undefined, true)).toString('latin1').trim();
  const filesAt = /^[0-9a-f]{40,64}$/.test(head) ? await headFiles(b, head) : new Map<string, string>();
  return { filesAt, changedAt: new Set((await changedKeys(b, filesAt)).keys()) };
}

/**
 * The baselines of the repositories `repos` nested in `workspace` (git-audit.ts finds them at start), at most
 * {@link MAX_NESTED_REPOS}, each with what had changed in it then ({@link changedKeys}); the others, and those whose
 * index git cannot read, in `nestedLeft` with why.
 */
async function recordNested(
  workspace: string,
  runner: Runner,
  repos: readonly NestedRepo[],
): Promise<Pick<IndexBaseline, 'nested' | 'nestedLeft'>> {
  const nested: NestedBaseline[] = [];
  const left = new Map<string, string>();
  for (const r of repos) {
    const rel = path.relative(workspace, r.worktree);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) continue;
    if (nested.length >= MAX_NESTED_REPOS) {
      left.set(rel, `more nested repositories than the ${MAX_NESTED_REPOS} the audit reads`);
      continue;
    }
    const own = await recordIndex(r.worktree, r.git, runner);
    const base = own && { ...own, top: workspace };
    const at = base && (await changesAt(base).catch(() => undefined));
    if (base && at) nested.push({ base, rel, ...at, told: new Map() });
    else left.set(rel, 'git could not read its index or HEAD at the start');
  }
  return { nested, nestedLeft: { which: left, told: false } };
}

/**
 * Makes visible again what the session hid from the person's `git status` since `b` (see the module comment), and
 * names it; the same in each repository nested in the workspace at start (`b.nested`: submodules, clones of their
 * own), whose changes the person's git status at the top hides under `submodule.<name>.ignore` or
 * `diff.ignoreSubmodules` (adversary round 26), and whose ignored files the top's git does not list: each nested one's
 * index is audited as the top's, what the session changed in it is named ({@link changedFindings}), and its ignored
 * files are read in the same walk as the top's, within the same bounds. `final`: the session is closing (what was told
 * already is told again, for the close note). `moveAside(abs)`: moves a stale `index.lock` of the top's away
 * (git-audit.ts's quarantine) when the index cannot be written at close. Never rejects: a failure is a finding.
 */
export async function auditIndex(b: IndexBaseline, final: boolean, moveAside?: (abs: string) => boolean): Promise<IndexFinding[]> {
  // (4) first, as its walk runs in a thread of its own meanwhile: what the session made or changed that git ignores.
  const ignored = ignoredFindings(b, final).catch((err: Error): IndexFinding[] => [
    { path: b.workspace, why: `the ignored files could not be listed (${err.message})`, kind: 'unchecked' },
  ]);
  const out = await auditOne(b, final, moveAside);
  for (const n of b.nested) {
    const before = folderStamp(b.workspace, n.rel);
    const found =
      before === undefined
        ? []
        : [
            ...(await auditOne(n.base, final)),
            ...(await changedFindings(n, final).catch((err: Error): IndexFinding[] => [
              {
                path: n.base.workspace,
                why: `what the session changed in this nested repository could not be listed (${err.message})`,
                kind: 'unchecked',
              },
            ])),
          ];
    out.push(...(before !== undefined && folderStamp(b.workspace, n.rel) === before ? found : [swappedFinding(n)]));
  }
  out.push(...(await ignored));
  if (b.nestedLeft.which.size > 0 && (final || !b.nestedLeft.told)) {
    if (!final) b.nestedLeft.told = true;
    for (const [rel, why] of b.nestedLeft.which)
      out.push({
        path: path.join(b.workspace, rel),
        why: `a nested repository NOT checked for what the session changed in it (${why}); review it by hand (\`git -C ${showName(rel)} status --ignored\`)`,
        kind: 'partial',
      });
  }
  return out;
}

/**
 * The folders from the workspace `workspace` (not included) down to `rel` (a nested repository's work tree) as they
 * are now: each one's inode and ctime (ns), or undefined when one is no folder (a symlink put in its place). A folder
 * renamed away and back, or swapped for a symlink to a folder of the owner's and back, changes its ctime: the audit's
 * git, which runs as the owner, would have listed that folder's names into the result (git follows a symlink at its
 * work tree's top, never below it). Compared before and after a nested repository is audited, whose findings count
 * only when the two are the same.
 */
function folderStamp(workspace: string, rel: string): string | undefined {
  let at = workspace;
  const out: string[] = [];
  for (const name of rel.split('/')) {
    at = path.join(at, name);
    let st: fs.BigIntStats | undefined;
    try {
      st = fs.lstatSync(nameBytes(at), { bigint: true, throwIfNoEntry: false });
    } catch {
      return undefined;
    }
    if (!st?.isDirectory()) return undefined;
    out.push(`${st.ino}:${st.ctimeNs}`);
  }
  return out.join('/');
}

/** The finding that the nested repository `n`'s folder (or one above it) was not the one audited. */
const swappedFinding = (n: NestedBaseline): IndexFinding => ({
  path: n.base.workspace,
  why: `a nested repository NOT checked for what the session changed in it: its folder, or one above it, is no folder now or changed while it was read (a rename, a symlink, an entry made or removed); the next audit tries again; review it by hand (\`git -C ${showName(n.rel)} status --ignored\`)`,
  kind: 'partial',
});

/**
 * Parts (1), (2), (3) and (5) of {@link auditIndex} on the repository of `b` (the top's or a nested one's): what its
 * index hides. `moveAside` as {@link auditIndex}'s.
 */
async function auditOne(b: IndexBaseline, final: boolean, moveAside?: (abs: string) => boolean): Promise<IndexFinding[]> {
  const out: IndexFinding[] = [];
  const index = path.join(b.git, 'index');
  const stamp = indexStamp(b.git);
  const count = headerCount(index) ?? 0;
  if (count > MAX_INDEX_ENTRIES)
    return [
      {
        path: index,
        why: `the index holds ${count} entries, more than the ${MAX_INDEX_ENTRIES} an audit reads: what git status shows was not checked; review git status yourself`,
        kind: 'unchecked',
      },
    ];
  let entries: Entry[];
  const reuse = stamp !== undefined && b.lastRead.stamp === stamp && b.lastRead.entries !== undefined;
  try {
    entries = reuse ? b.lastRead.entries!.map((e) => ({ ...e })) : await readEntries(b);
  } catch (err) {
    return [{ path: index, why: `the index could not be read (${(err as Error).message})`, kind: 'unchecked' }];
  }
  const extension = reuse ? b.lastRead.extension! : hasCacheExtension(index);
  // Writes the index with `args` and stdin `input`; at close a stale index.lock of the session's is moved and the write tried again.
  const write: IndexWrite = async (args, input) => {
    for (let tries = 0; ; tries++) {
      try {
        await runGit(b, args, input);
        return undefined;
      } catch (err) {
        const lock = path.join(b.git, 'index.lock');
        if (!(final && tries === 0 && fs.existsSync(lock) && moveAside?.(lock))) return (err as Error).message;
      }
    }
  };
  const read = entries.map((e) => ({ ...e }));
  await clearBits(b, entries, write, out);
  await clearStale(b, entries, final, write, out);
  // A write of this audit's git may carry an extension over too: then the file is read again.
  if (extension || indexStamp(b.git) !== stamp) await dropCaches(b, write, out);
  try {
    await checkCacheTree(b, entries, final, write, out);
  } catch (err) {
    out.push({
      path: path.join(b.git, 'index'),
      why: `its cache-tree could not be checked (${(err as Error).message})`,
      kind: 'unchecked',
    });
  }
  // Kept for the next audit only when nothing wrote the index meanwhile (this audit's writes included).
  const now = indexStamp(b.git);
  b.lastRead.stamp = now !== undefined && now === stamp ? now : undefined;
  b.lastRead.entries = read;
  b.lastRead.extension = extension;
  return out;
}

/** Writes the index with git `args` and stdin `input`: undefined when done, else why not. */
type IndexWrite = (args: string[], input: Buffer) => Promise<string | undefined>;

/** `paths` as NUL-terminated names, for git's `-z` input. */
const z = (paths: string[]): Buffer => Buffer.concat(paths.map((p) => Buffer.concat([Buffer.from(nameBytes(p)), Buffer.from([0])])));

/** (1) of {@link auditIndex}: clears the skip-worktree and assume-unchanged bits the session set (`entries` updated), into `out`. */
async function clearBits(b: IndexBaseline, entries: Entry[], write: IndexWrite, out: IndexFinding[]): Promise<void> {
  const abs = (rel: string): string => path.join(b.workspace, rel);
  for (const [flag, why, pick] of [
    [
      '--no-skip-worktree',
      'marked skip-worktree by the session, so git status and git diff did not look at the file',
      (e: Entry) => isSkipped(e) && !b.skipAt.has(e.path),
    ],
    [
      '--no-assume-unchanged',
      'marked assume-unchanged by the session, so git status and git diff did not look at the file',
      (e: Entry) => isAssumed(e) && !b.assumeAt.has(e.path),
    ],
  ] as const) {
    const paths = [...new Set(entries.filter(pick).map((e) => e.path))];
    if (paths.length === 0) continue;
    const failed = await write(['update-index', flag, '-z', '--stdin'], z(paths));
    for (const p of paths)
      out.push(
        failed
          ? { path: abs(p), why: `${why}; the bit could NOT be cleared (${failed})`, kind: 'failed' }
          : { path: abs(p), why: `${why}; the bit is cleared`, kind: 'shown' },
      );
    const cleared = new Set(paths);
    if (!failed)
      for (const e of entries)
        if (cleared.has(e.path)) e.tag = flag === '--no-skip-worktree' ? (isAssumed(e) ? 'h' : 'H') : e.tag.toUpperCase();
  }
}

/**
 * (2) of {@link auditIndex}: gives empty stat data to each entry git trusts by its stat data whose file the session
 * changed (ctime after the start, content not the entry's object), and names a change to an entry the person marked;
 * into `out`.
 */
async function clearStale(b: IndexBaseline, entries: Entry[], final: boolean, write: IndexWrite, out: IndexFinding[]): Promise<void> {
  const abs = (rel: string): string => path.join(b.workspace, rel);
  const stale: Entry[] = [];
  const staleFound: IndexFinding[] = [];
  const budget = { left: MAX_HASHED_BYTES };
  let n = 0;
  for (const e of entries) {
    if (++n % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    if (e.stage !== '0' || !/^(100644|100755|120000)$/.test(e.mode)) continue;
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(nameBytes(abs(e.path)), { throwIfNoEntry: false });
    } catch {
      continue;
    }
    // Missing (git says deleted) or older than the session.
    if (!st || st.ctimeMs < b.since) continue;
    const marked = (isSkipped(e) && b.skipAt.has(e.path)) || (isAssumed(e) && b.assumeAt.has(e.path));
    // Of other stat data than the index's: git looks at it (unless the person marked it).
    if (!marked && (Math.floor(st.mtimeMs / 1000) !== e.mtimeSec || st.size % 2 ** 32 !== e.size)) continue;
    if ((e.mode === '120000') !== st.isSymbolicLink()) continue;
    const key = `${st.ctimeMs}:${st.ino}:${e.oid}`;
    if (b.verified.get(e.path) === key) continue;
    const before = budget.left;
    const same = await sameContent(abs(e.path), e, st.size, budget);
    if (Math.floor(before / YIELD_BYTES) !== Math.floor(budget.left / YIELD_BYTES)) await new Promise((r) => setImmediate(r));
    if (same === true) {
      b.verified.set(e.path, key);
      continue;
    }
    if (marked && same === undefined) continue;
    if (marked) {
      // The person's own bit (a sparse checkout, a local tweak): left, and the change named once.
      if (b.verified.get(e.path) === `marked:${key}` && !final) continue;
      b.verified.set(e.path, `marked:${key}`);
      out.push({
        path: abs(e.path),
        why: `changed by the session, and marked ${isSkipped(e) ? 'skip-worktree' : 'assume-unchanged'} by the person before the session, so git status does not show it; review it`,
        kind: 'ignored',
      });
      continue;
    }
    stale.push(e);
    staleFound.push({
      path: abs(e.path),
      why:
        same === false
          ? "changed by the session while the index's stat data still said unchanged (written into the index, or left so), so git status and git diff did not look at it; its stat data are cleared so that git compares its content again"
          : `changed during the session, past what one audit hashes (${MAX_HASHED_BYTES >> 20} MiB); its stat data in the index are cleared so that git compares its content again`,
      kind: 'shown',
    });
  }
  if (stale.length > 0) {
    const lines = Buffer.concat(
      stale.map((e) => Buffer.concat([Buffer.from(`${e.mode} ${e.oid} 0\t`), Buffer.from(nameBytes(e.path)), Buffer.from([0])])),
    );
    const failed = await write(['update-index', '-z', '--index-info'], lines);
    for (const f of staleFound)
      out.push(
        failed
          ? {
              path: f.path,
              why: `${f.why.replace(/; its stat data.*$/, '')}; its stat data could NOT be cleared (${failed})`,
              kind: 'failed',
            }
          : f,
      );
  }
}

/** (3) of {@link auditIndex}: drops an untracked cache or fsmonitor extension (git trusts what it says of folders and files), into `out`. */
async function dropCaches(b: IndexBaseline, write: IndexWrite, out: IndexFinding[]): Promise<void> {
  const index = path.join(b.git, 'index');
  if (hasCacheExtension(index)) {
    const before = inode(index);
    const failed = await write(['update-index', '--no-untracked-cache', '--no-fsmonitor'], Buffer.alloc(0));
    if (failed) out.push({ path: index, why: `its untracked cache or fsmonitor data could NOT be dropped (${failed})`, kind: 'failed' });
    // git writes the index anew only when it dropped something (a path holding `UNTR` is no extension).
    else if (!b.extensionsAt && inode(index) !== before)
      out.push({
        path: index,
        why: 'an untracked cache or fsmonitor extension the session added, which tells git what changed without looking; dropped',
        kind: 'shown',
      });
  }
}

/** Intent-to-add (`git add -N`): git-ls-files `--debug`'s flags, CE_INTENT_TO_ADD. */
const INTENT_TO_ADD = 1 << 29;

/**
 * (5) of {@link auditIndex}: the cache-tree (the index's `TREE` extension) says which tree each folder's entries make,
 * and git trusts it instead of reading them: `git status` and `git diff` skip a folder whose node names HEAD's tree
 * (unpack-trees.c `cache_tree_matches_traversal`), and `git commit` writes the node's tree. A session that rewrites the
 * node after `git add` hides what it staged. The staged changes are found without the cache-tree (HEAD's tree listed
 * whole against the index's entries); each that `git diff-index --cached` (the cache-tree's reader) does not name has
 * its entry written again (or, gone from the index, removed again), which invalidates every node on its path; into
 * `out`. Skipped while neither the index file nor HEAD changed since the last check found the cache-tree true.
 */
async function checkCacheTree(b: IndexBaseline, entries: Entry[], final: boolean, write: IndexWrite, out: IndexFinding[]): Promise<void> {
  const head = (await runGit(b, ['rev-parse', '-q', '--verify', 'HEAD^{tree}'], undefined, true)).toString('latin1').trim();
  // An unborn HEAD: nothing to hide a change from (the first commit is shown whole).
  if (!/^[0-9a-f]{40,64}$/.test(head)) return;
  const st = fs.statSync(path.join(b.git, 'index'), { bigint: true, throwIfNoEntry: false });
  const stamp = st ? `${st.ino}:${st.size}:${st.ctimeNs}:${head}` : undefined;
  if (!final && stamp !== undefined && b.cacheTree.checked === stamp) return;
  const { staged, inIndex } = await stagedPaths(await headFiles(b, head), entries);
  const named = new Set<string>();
  if (staged.length > 0)
    for (const [n, name] of split0(await runGit(b, ['diff-index', '--cached', '--no-renames', '--name-only', '-z', head])).entries()) {
      if (n % YIELD_LINES === YIELD_LINES - 1) await new Promise((r) => setImmediate(r));
      named.add(decodeName(name));
    }
  const hidden = staged.filter((p) => !named.has(p));
  if (hidden.length === 0) {
    b.cacheTree.checked = stamp;
    return;
  }
  b.cacheTree.checked = undefined;
  const zero = '0'.repeat(head.length);
  const lines = hidden.map((p) => {
    const e = inIndex.get(p);
    return Buffer.concat([Buffer.from(e ? `${e.mode} ${e.oid} 0\t` : `0 ${zero}\t`), Buffer.from(nameBytes(p)), Buffer.from([0])]);
  });
  const failed = await write(['update-index', '-z', '--index-info'], Buffer.concat(lines));
  const why = `staged by the session under a cache-tree (the index's TREE extension) that said its folder was unchanged, so git status and git diff did not show it`;
  for (const p of hidden)
    out.push(
      failed
        ? { path: path.join(b.workspace, p), why: `${why}; the cache-tree could NOT be invalidated (${failed})`, kind: 'failed' }
        : { path: path.join(b.workspace, p), why: `${why}; the cache-tree is invalidated there`, kind: 'shown' },
    );
}

/**
 * The files of the tree `tree` (`git ls-tree -r`, no cache-tree involved): path → `<mode> <oid>`, as the index's entries
 * give them. Yields to the event loop as it goes.
 * @throws Error past {@link MAX_INDEX_ENTRIES} files, or git's
 */
async function headFiles(b: IndexBaseline, tree: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const listed = split0(await runGit(b, ['ls-tree', '-r', '-z', '--full-tree', tree]));
  if (listed.length > MAX_INDEX_ENTRIES)
    throw new Error(`HEAD's tree lists ${listed.length} files, more than the ${MAX_INDEX_ENTRIES} an audit reads`);
  // `<mode> <type> <oid>\t<path>`.
  for (const [n, line] of listed.entries()) {
    if (n % YIELD_LINES === YIELD_LINES - 1) await new Promise((r) => setImmediate(r));
    const tab = line.indexOf(0x09);
    if (tab < 0) continue;
    const meta = line.toString('latin1', 0, tab);
    files.set(decodeName(line.subarray(tab + 1)), `${meta.slice(0, meta.indexOf(' '))} ${meta.slice(meta.lastIndexOf(' ') + 1)}`);
  }
  return files;
}

/**
 * What differs between `inHead` ({@link headFiles}) and the index's `entries`: the staged paths, and the entries by path.
 * Unmerged and intent-to-add entries are left out (git names them apart from the cache-tree). Yields as it goes.
 */
async function stagedPaths(
  inHead: ReadonlyMap<string, string>,
  entries: Entry[],
): Promise<{ staged: string[]; inIndex: Map<string, Entry> }> {
  const apart = new Set<string>();
  const inIndex = new Map<string, Entry>();
  const staged: string[] = [];
  let n = 0;
  const tick = async (): Promise<void> => {
    if (++n % YIELD_LINES === 0) await new Promise((r) => setImmediate(r));
  };
  for (const e of entries) {
    await tick();
    if (e.stage !== '0' || e.flags & INTENT_TO_ADD) apart.add(e.path);
  }
  for (const e of entries) {
    await tick();
    if (apart.has(e.path)) continue;
    inIndex.set(e.path, e);
    if (inHead.get(e.path) !== `${e.mode} ${e.oid}`) staged.push(e.path);
  }
  for (const p of inHead.keys()) {
    await tick();
    if (!inIndex.has(p) && !apart.has(p)) staged.push(p);
  }
  return { staged, inIndex };
}

/**
 * Whether the file `file` holds `e`'s object: its blob hash (sha1 or sha256, by the object id's length), or, for a file
 * of at most {@link MAX_CRLF_BYTES}, the hash of its content with CRLF made LF (git's eol conversion). Opened without
 * following a symlink or blocking; read at once up to {@link SMALL_FILE_BYTES} (`size`, from lstat), else in chunks, so
 * that the worker's event loop serves other sessions meanwhile (round 24: no work on it that the session sizes; the
 * caller yields every 8 MiB hashed). Undefined when it is over `budget.left` bytes
 * (then git must compare it); false when it cannot be read as the entry's kind.
 */
async function sameContent(file: string, e: Entry, size: number, budget: { left: number }): Promise<boolean | undefined> {
  const algo = e.oid.length === 64 ? 'sha256' : 'sha1';
  const blob = (b: Buffer): string => createHash(algo).update(`blob ${b.length}\0`).update(b).digest('hex');
  if (e.mode === '120000') {
    try {
      return blob(fs.readlinkSync(nameBytes(file), { encoding: 'buffer' })) === e.oid;
    } catch {
      return false;
    }
  }
  const holds = (bytes: Buffer): boolean => {
    if (blob(bytes) === e.oid) return true;
    return (
      bytes.length <= MAX_CRLF_BYTES &&
      bytes.includes('\r\n') &&
      blob(Buffer.from(bytes.toString('latin1').replace(/\r\n/g, '\n'), 'latin1')) === e.oid
    );
  };
  if (size <= SMALL_FILE_BYTES && size <= budget.left) {
    // Small: read at once (most source files), which costs the event loop less than four round trips to the thread pool.
    try {
      const r = readRegular(file, SMALL_FILE_BYTES, false);
      if (r.truncated) return false;
      budget.left -= r.bytes.length;
      return holds(r.bytes);
    } catch {
      return false;
    }
  }
  const c = fs.constants;
  let fh: fs.promises.FileHandle;
  try {
    fh = await fs.promises.open(nameBytes(file), c.O_RDONLY | c.O_NONBLOCK | c.O_NOFOLLOW);
  } catch {
    return false;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return false;
    if (st.size > budget.left) return undefined;
    budget.left -= st.size;
    const hash = createHash(algo).update(`blob ${st.size}\0`);
    const keep: Buffer[] = [];
    const chunk = Buffer.alloc(1 << 20);
    let total = 0;
    for (;;) {
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, total);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > st.size) return false;
      hash.update(chunk.subarray(0, bytesRead));
      if (st.size <= MAX_CRLF_BYTES) keep.push(Buffer.from(chunk.subarray(0, bytesRead)));
    }
    if (total !== st.size) return false;
    if (hash.digest('hex') === e.oid) return true;
    return st.size <= MAX_CRLF_BYTES && holds(Buffer.concat(keep));
  } catch {
    return false;
  } finally {
    await fh.close();
  }
}

/** Findings (4) names one by one in a root (an ignored folder git lists); past them, one finding counts the root's. */
const MAX_NAMED_IN_ROOT = 10;

/** What the walk of one root found, to be named: fresh entries (told once per ctime) and bytecode removed. */
interface RootFound {
  fresh: FreshEntry[];
  freshMore: number;
  removed: string[];
  removedMore: number;
}

/**
 * The findings of (4): the untracked files and folders git ignores (`git ls-files -o -i --exclude-standard
 * --directory`, a wholly ignored folder as one root), in the top repository and in each nested one (`b.nested`: the
 * top's git lists none of theirs), are read in one walk by ignored-walk.ts `walkIgnored` (a worker thread, within
 * {@link IGNORED_WALK_LIMITS}, or {@link IGNORED_WALK_LIMITS_AT_CLOSE} at close), which removes the Python bytecode the
 * session wrote and finds each entry whose ctime is after the start; {@link nameIgnored} names them per repository.
 */
async function ignoredFindings(b: IndexBaseline, final: boolean): Promise<IndexFinding[]> {
  const repos = [{ base: b, rel: '' }, ...b.nested];
  const out: IndexFinding[] = [];
  const stamps = repos.map((r) => (r.rel === '' ? '' : folderStamp(b.workspace, r.rel)));
  const lists = await Promise.all(
    repos.map(async (r, i) => {
      if (stamps[i] === undefined) return [];
      try {
        return await ignoredRoots(r.base);
      } catch (err) {
        if (r.rel === '') throw err;
        out.push({ path: r.base.workspace, why: `its ignored files could not be listed (${(err as Error).message})`, kind: 'unchecked' });
        return [];
      }
    }),
  );
  const prefixes = repos.map((r) => (r.rel === '' ? Buffer.alloc(0) : Buffer.concat([Buffer.from(nameBytes(r.rel)), Buffer.from('/')])));
  const roots = lists.flatMap((l, i) => l.map((root) => Buffer.concat([prefixes[i]!, root])));
  if (roots.length === 0) return out;
  const limits = final ? IGNORED_WALK_LIMITS_AT_CLOSE : IGNORED_WALK_LIMITS;
  const walk = await walkIgnored(b.workspace, roots, b.since, limits, gitRelOf(b));
  let offset = 0;
  for (const [i, r] of repos.entries()) {
    const part = walkPart(walk, prefixes[i]!, offset, lists[i]!.length, i === 0);
    offset += lists[i]!.length;
    if (r.rel !== '' && (stamps[i] === undefined || folderStamp(b.workspace, r.rel) !== stamps[i])) {
      // Listed by the audit's git in a folder that is not the one recorded (see folderStamp): nothing of it is told.
      if (stamps[i] !== undefined)
        out.push({
          ...swappedFinding(r as NestedBaseline),
          why: `its ignored files NOT checked: the folder changed while they were read; review them by hand`,
        });
      continue;
    }
    if (lists[i]!.length > 0 || part.unfinished !== undefined) out.push(...(await nameIgnored(r.base, lists[i]!, part, final)));
  }
  return out;
}

/** The root git dir's path in `b`'s workspace when it lies there (`.git -> .gitdir`, ignored by info/exclude): git's to write, not read. */
const gitRelOf = (b: IndexBaseline): Buffer | undefined =>
  b.git.startsWith(`${b.workspace}/`) ? Buffer.from(nameBytes(path.relative(b.workspace, b.git))) : undefined;

/** The ignored files and folders of `b`'s repository (`git ls-files -o -i --directory`): roots for the walk, relative to its work tree. */
async function ignoredRoots(b: IndexBaseline): Promise<Buffer[]> {
  const cfg = b.excludesFile ? ['-c', `core.excludesFile=${b.excludesFile}`] : [];
  const listed = await runGit(b, [...cfg, 'ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
  const gitRel = gitRelOf(b);
  return split0(listed)
    .map((r) => (r[r.length - 1] === 0x2f ? r.subarray(0, r.length - 1) : r))
    .filter(
      (r) =>
        gitRel === undefined ||
        !(r.equals(gitRel) || (r.length > gitRel.length && r[gitRel.length] === 0x2f && r.subarray(0, gitRel.length).equals(gitRel))),
    );
}

/**
 * The part of `walk` on the `n` roots from `offset` on, whose paths begin with `prefix` (a nested repository's folder
 * and `/`, or nothing for the top's): paths and root indices made its own. A folder the walk could not read counts for
 * the top's (`top`), as the walk does not say whose it was.
 */
function walkPart(walk: GitIgnoredWalk, prefix: Buffer, offset: number, n: number, top: boolean): GitIgnoredWalk {
  const mine = (root: number): boolean => root >= offset && root < offset + n;
  const own = (raw: Uint8Array): Uint8Array => raw.subarray(prefix.length);
  const under = (raw: Uint8Array): boolean => raw.length > prefix.length && Buffer.from(raw.subarray(0, prefix.length)).equals(prefix);
  const stopped = walk.stoppedAt >= 0 ? walk.stoppedAt < offset + n : top;
  return {
    fresh: walk.fresh.filter((f) => mine(f.root)).map((f) => ({ ...f, raw: own(f.raw), root: f.root - offset })),
    removed: walk.removed.filter((r) => mine(r.root)).map((r) => ({ raw: own(r.raw), root: r.root - offset })),
    more: walk.more.slice(offset, offset + n),
    touched: walk.touched.filter((t) => prefix.length === 0 || under(t.raw)).map((t) => ({ ...t, raw: own(t.raw) })),
    stoppedAt: walk.stoppedAt >= 0 && stopped ? Math.max(0, walk.stoppedAt - offset) : -1,
    unfinished: walk.unfinished !== undefined && stopped ? walk.unfinished : undefined,
  };
}

/**
 * Names what the walk of `b`'s ignored `roots` found (`walk`, its own part): each fresh entry with the rule that hides
 * it (`git check-ignore -v`): the session's ({@link sessionsRule}) or the person's; one by one up to
 * {@link MAX_NAMED_IN_ROOT} in a root, else counted per root; each told once per ctime, all again at close. A walk
 * that stopped short names what it did not read (once before close, and at close).
 */
async function nameIgnored(b: IndexBaseline, roots: Buffer[], walk: GitIgnoredWalk, final: boolean): Promise<IndexFinding[]> {
  const cfg = b.excludesFile ? ['-c', `core.excludesFile=${b.excludesFile}`] : [];
  for (const t of walk.touched) b.ignored.ours.set(decodeName(Buffer.from(t.raw)), t.ctime);
  const found = roots.map((): RootFound => ({ fresh: [], freshMore: 0, removed: [], removedMore: 0 }));
  for (const r of walk.removed) found[r.root]?.removed.push(decodeName(Buffer.from(r.raw)));
  for (const f of walk.fresh) {
    const rel = decodeName(Buffer.from(f.raw));
    if (f.kind === 'dir' && b.ignored.ours.get(rel) === f.ctime) continue;
    if (!final && b.told.get(rel) === f.ctime) continue;
    b.told.set(rel, f.ctime);
    found[f.root]?.fresh.push(f);
  }
  walk.more.forEach((m, i) => {
    found[i]!.freshMore += m.fresh;
    found[i]!.removedMore += m.removed;
  });
  const out: IndexFinding[] = [];
  const rules = await rulesOf(
    b,
    cfg,
    roots.filter((_, i) => found[i]!.fresh.length + found[i]!.freshMore > 0),
  );
  for (const [i, f] of found.entries()) {
    const root = decodeName(roots[i]!);
    out.push(...removedFindings(b, root, f));
    const rule = rules.get(root);
    if (rule !== undefined && f.fresh.length + f.freshMore > 0) out.push(...freshFindings(b, root, rule, f));
  }
  const partial = partialFinding(b, walk, roots, final);
  return partial ? [...out, partial] : out;
}

/** The rule that ignores each of `roots` (`git check-ignore -v`): root (decoded) → its words for a finding, with whose it is. */
async function rulesOf(b: IndexBaseline, cfg: string[], roots: Buffer[]): Promise<Map<string, { text: string; sessions: boolean }>> {
  const rules = new Map<string, { text: string; sessions: boolean }>();
  if (roots.length === 0) return rules;
  const input = Buffer.concat(roots.map((r) => Buffer.concat([r, Buffer.from([0])])));
  // Exit 1: none of them matched (a rule gone meanwhile: then git status shows them).
  const res = await runGit(b, [...cfg, 'check-ignore', '-v', '-z', '--stdin', '--no-index'], input, true);
  const f = split0(res).map(decodeName);
  for (let i = 0; i + 3 < f.length; i += 4) {
    const [source, line, pattern, rel] = [f[i]!, f[i + 1]!, f[i + 2]!, f[i + 3]!.replace(/\/$/, '')];
    if (source === '' || pattern.startsWith('!')) continue;
    const file = path.isAbsolute(source) ? source : path.join(b.workspace, source);
    rules.set(rel, { text: `${showRel(b, file)}:${line} \`${pattern}\``, sessions: sessionsRule(b, file, pattern) });
  }
  return rules;
}

/** The findings for the fresh entries of the root `root` ignored by `rule`: one by one, or one counting them. */
function freshFindings(b: IndexBaseline, root: string, rule: { text: string; sessions: boolean }, f: RootFound): IndexFinding[] {
  const kind = rule.sessions ? 'ignored' : 'unlisted';
  // The note's heading says what the kind means (git-audit.ts hiddenNote); each finding adds only its own facts.
  const by = rule.sessions ? `ignored by a rule the session wrote: ${rule.text}` : rule.text;
  const abs = (rel: string): string => path.join(b.workspace, rel);
  if (f.fresh.length <= MAX_NAMED_IN_ROOT && f.freshMore === 0)
    return f.fresh.map((e) => {
      const what =
        e.kind === 'dir'
          ? 'a folder: an entry removed or renamed away, or the folder itself moved; '
          : e.kind === 'kept'
            ? `Python bytecode NOT removed (${e.why ?? 'kept'}); `
            : '';
      return { path: abs(decodeName(Buffer.from(e.raw))), why: `${what}${by}`, kind };
    });
  const some = f.fresh.slice(0, 3).map((e) => showName(path.relative(root, decodeName(Buffer.from(e.raw)))) || '.');
  const n = f.fresh.length + f.freshMore;
  return [{ path: abs(root), why: `${n} files and folders in it, ${some.join(', ')}, …; ${by}`, kind }];
}

/** The findings for the bytecode removed in the root `root`: one by one, or one counting them. */
function removedFindings(b: IndexBaseline, root: string, f: RootFound): IndexFinding[] {
  const n = f.removed.length + f.removedMore;
  if (n === 0) return [];
  // The note's heading says why it is removed (git-audit.ts hiddenNote): its header may claim the source's mtime and size.
  const why = 'written during the session';
  if (n <= MAX_NAMED_IN_ROOT) return f.removed.map((rel) => ({ path: path.join(b.workspace, rel), why, kind: 'removed' }));
  return [{ path: path.join(b.workspace, root), why: `${n} files in it ${why}`, kind: 'removed' }];
}

/**
 * The finding that the walk did not read every root (from `walk.stoppedAt`, or one folder it could not read): told once
 * before close and again at close; undefined when it read them all or it was told already.
 */
function partialFinding(b: IndexBaseline, walk: GitIgnoredWalk, roots: Buffer[], final: boolean): IndexFinding | undefined {
  if (walk.unfinished === undefined || (!final && b.ignored.partialTold)) return undefined;
  if (!final) b.ignored.partialTold = true;
  const left = walk.stoppedAt >= 0 ? roots.slice(walk.stoppedAt).map((r) => showName(decodeName(r))) : [];
  const what =
    left.length > 0
      ? `${left.slice(0, 5).join(', ')}${left.length > 5 ? ` and ${left.length - 5} more` : ''} NOT fully checked`
      : 'NOT fully checked';
  return {
    path: left.length > 0 ? path.join(b.workspace, decodeName(roots[walk.stoppedAt]!)) : b.workspace,
    why: `ignored files and folders ${what} for what the session made or changed (the walk stopped: ${walk.unfinished}), so some may be unnamed${final ? '' : '; the close checks further'}; review them by hand`,
    kind: 'partial',
  };
}

/** Whether the rule `pattern` of the ignore file `file` (absolute) is the session's: the file changed since the start and the line was not in it then. */
function sessionsRule(b: IndexBaseline, file: string, pattern: string): boolean {
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(nameBytes(file), { throwIfNoEntry: false });
  } catch {
    return true;
  }
  if (st !== undefined && st.ctimeMs < b.since) return false;
  return !(b.ignoreLines.get(file)?.has(pattern) ?? false);
}

const showRel = (b: IndexBaseline, file: string): string => {
  const from = b.top ?? b.workspace;
  return file.startsWith(`${from}/`) ? path.relative(from, file) : file;
};

/** The inode number of `file`, or -1. */
function inode(file: string): number {
  try {
    return fs.lstatSync(file).ino;
  } catch {
    return -1;
  }
}

/** The NUL-terminated fields of `buf`. */
function split0(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (let nul = buf.indexOf(0, at); nul >= 0; nul = buf.indexOf(0, at)) {
    out.push(buf.subarray(at, nul));
    at = nul + 1;
  }
  return out;
}
