/**
 * The git audit's part on the git state the person's next ordinary git command obeys (adversary round 30). The session's
 * git must write HEAD, refs, reflogs and the state of an operation in progress (git-guard.ts `isGitState`), so it can
 * leave, with git or by hand:
 *
 * - an operation in progress (`rebase-merge/`, `rebase-apply/`, `sequencer/`, `MERGE_HEAD`, `CHERRY_PICK_HEAD`,
 *   `REVERT_HEAD`, `BISECT_*`) whose abort resets the branch to the commit its files name (`git rebase --abort` trusts
 *   `orig-head`, `git cherry-pick --abort` `sequencer/head`, `git bisect reset` `BISECT_START`), or whose todo's `exec`
 *   line runs at `git rebase --continue`; and `ORIG_HEAD` (the documented undo `git reset --hard ORIG_HEAD`),
 *   `AUTO_MERGE`, `FETCH_HEAD`;
 * - the branch moved to a commit that reads as the person's (`git commit --amend` with the committer copied: message,
 *   authors and dates the same, only the id differs), HEAD detached or switched;
 * - another ref made, moved or deleted (`refs/stash`, whose `git stash pop` applies it; tags, remote-tracking refs,
 *   notes), and a reflog rewritten so that `git reflog`, `HEAD@{1}` or `git stash list` name a commit of the session's.
 *
 * A session may commit (agents do): nothing here blocks or moves a commit or a ref. {@link recordGitState} notes, at
 * start, each repository's HEAD, refs (`git for-each-ref`) and state files; {@link auditGitState}, run by git-audit.ts
 * `auditGit` after each command and edit and at close, names each change once (all again at close) in words the person
 * acts on: which branch moved from which commit to which, what `git diff` between them shows, and which commit an
 * abort would reset to. At close, the state of an operation in progress (and `ORIG_HEAD`, `AUTO_MERGE`, `FETCH_HEAD`)
 * that the session made or changed and that names a commit not reachable from the refs at start, or holds an `exec`
 * line, is moved to the quarantine (an abort then has nothing to obey) with every other file of its operation (all or
 * none: a half left behind breaks the person's abort), and the finding says what the person runs afterwards; during
 * the session it is only named (the session's own rebase goes on). The root repository and each nested one the guard
 * holds are audited alike, and so is each linked worktree's git dir in theirs (`worktrees/<id>/`: its HEAD, index,
 * reflog and operation state, which git in that checkout, maybe outside the workspace, obeys; adversary round 32).
 * `rr-cache/` entries the session made or changed (git's rerere is on by itself while the folder exists) are named,
 * and moved at close; entries of the person's it deleted are named. A bisect moved at close takes its refs
 * (`refs/bisect/*`) along. So is `shallow` (adversary round 34), the list of commits git takes for parentless: one the
 * session made, changed or removed is named, and one it made or changed is moved at close. Its git
 * runs as the workspace's owner, with no system or global config and no hook (worktree-git.ts `NO_REPO_CODE`), and
 * reads no file's content. Attack tests: git-state-audit.test.ts, git-state-close.test.ts, adversary-round30.test.ts,
 * adversary-round32.test.ts.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { GitFinding } from './git-finding';
import { safeText } from '../shared/display';
import { showName } from './git-walk';
import { tryReadRegular } from './safe-open';
import { auditGit, type Runner } from './worktree-git';

/** Files of a git dir that an operation in progress, an undo or a fetch leaves, each read as a commit list. */
const STATE_FILES = [
  'ORIG_HEAD',
  'MERGE_HEAD',
  'CHERRY_PICK_HEAD',
  'REVERT_HEAD',
  'AUTO_MERGE',
  'FETCH_HEAD',
  'BISECT_START',
  'BISECT_EXPECTED_REV',
  'BISECT_HEAD',
  'BISECT_LOG',
  'BISECT_TERMS',
  'BISECT_NAMES',
  'BISECT_ANCESTORS_OK',
  'BISECT_FIRST_PARENT',
] as const;

/** The folder of a bisect's refs (`bad`, `good-<id>`, `skip-<id>`), moved with the rest of its bisect at close. */
const BISECT_REFS = 'refs/bisect';

/** Folders of a git dir that hold an operation in progress. */
const STATE_DIRS = ['rebase-merge', 'rebase-apply', 'sequencer'] as const;

/**
 * The files and folders of each operation in progress that git reads together, as git writes them (builtin/merge.c,
 * sequencer.c, bisect.c): at close they are moved all together or not at all, since a half left behind breaks the
 * person's abort (`git merge --abort` with MERGE_MSG but no MERGE_HEAD: "There is no merge to abort"). MERGE_MSG,
 * MERGE_MODE, MERGE_RR and REBASE_HEAD are moved only so, never named on their own.
 */
const OPERATION_PARTS: Readonly<Record<string, readonly string[]>> = {
  merge: ['MERGE_HEAD', 'MERGE_MSG', 'MERGE_MODE', 'MERGE_RR', 'AUTO_MERGE'],
  rebase: ['rebase-merge', 'rebase-apply', 'REBASE_HEAD', 'MERGE_MSG', 'AUTO_MERGE', 'MERGE_RR'],
  pick: ['sequencer', 'CHERRY_PICK_HEAD', 'REVERT_HEAD', 'MERGE_MSG', 'AUTO_MERGE', 'MERGE_RR'],
  // `refs/bisect/` (bad, good-<id>, skip-<id>): `git log --bisect` and `git rev-list --bisect` read them, and they keep
  // the bisect's commits in `git log --all` (git-bisect, gitrevisions).
  bisect: [...STATE_FILES.filter((f) => f.startsWith('BISECT_')), BISECT_REFS],
};

/** The operation ({@link OPERATION_PARTS}) a state path moved at close takes along; the rest is moved alone. */
const OPERATION_OF: Readonly<Record<string, string>> = {
  MERGE_HEAD: 'merge',
  'rebase-merge': 'rebase',
  'rebase-apply': 'rebase',
  sequencer: 'pick',
  CHERRY_PICK_HEAD: 'pick',
  REVERT_HEAD: 'pick',
  ...Object.fromEntries(OPERATION_PARTS.bisect!.filter((f) => f !== BISECT_REFS).map((f) => [f, 'bisect'])),
};

/** Most linked worktrees (`<git dir>/worktrees/<id>`) of one git dir audited; past it one finding names the rest as not checked. */
const MAX_WORKTREES = 32;

/** Most `rr-cache/<id>` entries (recorded conflict resolutions) read; past it one finding names the rest as not checked. */
const MAX_RR_ENTRIES = 2000;

/** Reflogs whose rewriting changes what `git reflog`, `@{n}` and `git stash list` name (more are listed by branch). */
const LOGS = ['logs/HEAD', 'logs/refs/stash'] as const;

/** Most bytes of one state file or folder read (a todo of thousands of lines fits); past it the digest covers the start. */
const MAX_STATE_BYTES = 4 << 20;

/** Most refs named one by one in one audit; past it one finding counts them. */
const MAX_NAMED_REFS = 10;

/** Most file names `git diff` between two commits is quoted with. */
const MAX_DIFF_NAMES = 8;

/** Longest one git call of this audit may take, ms. */
const GIT_TIMEOUT_MS = 10_000;

/** One repository's git state at start, and what was told since. */
interface StateRepo {
  /** Its git dir (absolute). */
  readonly git: string;
  /** How the findings name it: '' for the root, else ` in the repository whose git dir is X`. */
  readonly where: string;
  /** What `HEAD` said at start (`ref: refs/heads/main`, or a commit id when detached) and the commit it named. */
  readonly head: { readonly text: string; readonly oid: string | undefined };
  /** Every ref at start: name → object id. */
  readonly refs: ReadonlyMap<string, string>;
  /** Each state file and folder ({@link STATE_FILES}, {@link STATE_DIRS}) and reflog at start: path relative to `git` → {@link Digest}. */
  readonly files: ReadonlyMap<string, Digest>;
  /** What was told: key → the state it was told for (told again when it changes, and all at close). */
  readonly told: Map<string, string>;
  /**
   * For a linked worktree's git dir (`<git dir>/worktrees/<id>`, its own HEAD, index, reflog and operation state): its
   * checkout as its `gitdir` file names it. Its refs are its common dir's, told there; its `index` is read too.
   */
  readonly linked: string | undefined;
  /**
   * `rr-cache/` at start (git's rerere, which turns itself on when the folder is there): entry → {@link Digest}, `.`
   * for rr-cache itself when it is no folder; undefined when there was none. Not read for a linked worktree (it uses
   * its common dir's).
   */
  readonly rr: ReadonlyMap<string, Digest> | undefined;
  /** How many rr-cache entries past {@link MAX_RR_ENTRIES} were not read at start. */
  readonly rrLeft: number;
}

/** A state file's or folder's content: its sha256 and size (bytes read), or `none`. */
interface Digest {
  readonly sha: string;
  readonly size: number;
  /** For a reflog: its bytes at start, to tell an append (the session's git) from a rewrite. */
  readonly bytes?: Buffer;
}

/** What {@link recordGitState} noted at start. */
export interface GitStateBaseline {
  readonly workspace: string;
  readonly runner: Runner;
  readonly repos: readonly StateRepo[];
  /** How many linked worktrees past {@link MAX_WORKTREES} (per git dir) were not recorded: named as not checked at close. */
  readonly worktreesLeft: number;
}

/**
 * Runs git on the git dir `git` (no work tree, worktree-git.ts {@link auditGit}) with `args` and stdin `input` as
 * `runner`, within {@link GIT_TIMEOUT_MS}; resolves with stdout.
 * @throws Error with git's first line of stderr, or the timeout
 */
function runGit(runner: Runner, git: string, args: string[], input = ''): Promise<string> {
  return auditGit(git, args, { runner, input, timeoutMs: GIT_TIMEOUT_MS });
}

/** The refs of the git dir `git` (`git for-each-ref`, loose and packed): name → object id. */
async function readRefs(runner: Runner, git: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const line of (await runGit(runner, git, ['for-each-ref', '--format=%(objectname) %(refname)'])).split('\n')) {
    const sp = line.indexOf(' ');
    if (sp > 0) out.set(line.slice(sp + 1), line.slice(0, sp));
  }
  return out;
}

/** What `HEAD` of `git` says (trimmed, as read: a symref line or an id) and the commit it names by `refs`. */
function readHead(git: string, refs: ReadonlyMap<string, string>): { text: string; oid: string | undefined } {
  const text = tryReadRegular(path.join(git, 'HEAD'), 4096, false)?.bytes.toString('utf8').trim() ?? '';
  const m = /^ref: (\S+)$/.exec(text);
  return { text, oid: m ? refs.get(m[1]!) : /^[0-9a-f]{40,64}$/.test(text) ? text : undefined };
}

/**
 * The content of the state file or folder `rel` of `git` (a folder: each regular file's name and bytes, sorted), or
 * undefined when missing; never follows a symlink, reads no FIFO. `keep`: keep the bytes (a reflog's).
 */
function digestOf(git: string, rel: string, keep = false): Digest | undefined {
  const abs = path.join(git, rel);
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(abs, { throwIfNoEntry: false });
  } catch {
    st = undefined;
  }
  if (!st) return undefined;
  const h = createHash('sha256');
  let size = 0;
  if (st.isDirectory()) {
    let names: string[] = [];
    try {
      names = fs.readdirSync(abs).sort();
    } catch {
      /* unreadable: its digest is its name list, empty */
    }
    for (const name of names) {
      const r = size < MAX_STATE_BYTES ? tryReadRegular(path.join(abs, name), MAX_STATE_BYTES - size, false) : undefined;
      h.update(`${name}\0${r ? r.bytes.length : -1}\0`);
      if (r) h.update(r.bytes);
      size += r?.bytes.length ?? 0;
    }
    return { sha: h.digest('hex'), size };
  }
  const r = tryReadRegular(abs, MAX_STATE_BYTES, false);
  const bytes = r?.bytes ?? Buffer.from(`${st.mode}:${st.size}`);
  return { sha: h.update(bytes).digest('hex'), size: bytes.length, ...(keep ? { bytes } : {}) };
}

/**
 * The state paths of `git` this audit reads: {@link STATE_FILES}, {@link STATE_DIRS}, {@link LOGS}, the reflog of
 * HEAD's branch, and a linked worktree's `index` or a repository's `shallow` (a linked worktree's git reads its common
 * dir's).
 */
function statePaths(head: string, linked = false): string[] {
  const m = /^ref: (refs\/\S+)$/.exec(head);
  return [...STATE_FILES, ...STATE_DIRS, ...LOGS, ...(m ? [`logs/${m[1]}`] : []), linked ? 'index' : 'shallow'];
}

/** The folders of `git`'s linked worktrees (`worktrees/<id>`, no symlink), sorted, and how many past {@link MAX_WORKTREES} were left out. */
function worktreeAdmins(git: string): { admins: string[]; left: number } {
  let ids: string[];
  try {
    ids = fs.readdirSync(path.join(git, 'worktrees')).sort();
  } catch {
    return { admins: [], left: 0 };
  }
  const admins = ids.map((id) => path.join(git, 'worktrees', id)).filter((d) => fs.lstatSync(d, { throwIfNoEntry: false })?.isDirectory());
  return { admins: admins.slice(0, MAX_WORKTREES), left: Math.max(0, admins.length - MAX_WORKTREES) };
}

/**
 * `rr-cache/` of `git` now: each entry's {@link Digest} (`.` → rr-cache's own when it is no folder), and how many
 * entries past {@link MAX_RR_ENTRIES} were not read; undefined when there is none.
 */
function readRr(git: string): { entries: Map<string, Digest>; left: number } | undefined {
  const st = fs.lstatSync(path.join(git, 'rr-cache'), { throwIfNoEntry: false });
  if (!st) return undefined;
  const entries = new Map<string, Digest>();
  if (!st.isDirectory()) return { entries: new Map([['.', digestOf(git, 'rr-cache')!]]), left: 0 };
  let names: string[] = [];
  try {
    names = fs.readdirSync(path.join(git, 'rr-cache')).sort();
  } catch {
    /* unreadable: no entry read */
  }
  for (const name of names.slice(0, MAX_RR_ENTRIES)) {
    const d = digestOf(git, `rr-cache/${name}`);
    if (d) entries.set(name, d);
  }
  return { entries, left: Math.max(0, names.length - MAX_RR_ENTRIES) };
}

/** One git dir's {@link StateRepo} at start (`linked`: a linked worktree's checkout), or undefined when git cannot read its refs. */
async function recordRepo(runner: Runner, git: string, where: string, linked: string | undefined): Promise<StateRepo | undefined> {
  const refs = await readRefs(runner, git).catch(() => undefined);
  if (!refs) return undefined;
  const head = readHead(git, refs);
  const files = new Map<string, Digest>();
  for (const rel of statePaths(head.text, linked !== undefined)) {
    const d = digestOf(git, rel, rel.startsWith('logs/'));
    if (d) files.set(rel, d);
  }
  const rr = linked === undefined ? readRr(git) : undefined;
  return { git, where, head, refs, files, told: new Map(), linked, rr: rr?.entries, rrLeft: rr?.left ?? 0 };
}

/** The checkout of the linked worktree whose git dir is `admin`, as its `gitdir` file names it (escaped), or its id. */
function linkedCheckout(admin: string): string {
  const named = line1(admin, 'gitdir');
  return safeText(showName(named === '' ? path.basename(admin) : named.replace(/\/\.git$/, '')), false);
}

/**
 * What the git dirs `gits` (the root's first, then the nested ones the guard holds, absolute) hold at start, for
 * {@link auditGitState}; a repository git cannot read is left out (its refs are then not audited; the rest of the git
 * audit still runs). `runner`: who the audit's git runs as (worktree-git.ts `ownerOf`). Call before bash starts.
 */
export async function recordGitState(workspace: string, gits: readonly string[], runner: Runner): Promise<GitStateBaseline> {
  const repos: StateRepo[] = [];
  let worktreesLeft = 0;
  for (const [i, git] of gits.entries()) {
    const where = i === 0 ? '' : ` in the repository whose git dir is ${showName(path.relative(workspace, git))}`;
    const repo = await recordRepo(runner, git, where, undefined);
    if (repo) repos.push(repo);
    // Each linked worktree's own HEAD, index and operation state: git in that checkout (maybe outside the workspace) obeys them.
    const { admins, left } = worktreeAdmins(git);
    worktreesLeft += left;
    for (const admin of admins) {
      const checkout = linkedCheckout(admin);
      const w = ` in the linked worktree ${checkout}${where} (its git dir ${showName(path.relative(workspace, admin))})`;
      const linked = await recordRepo(runner, admin, w, checkout);
      if (linked) repos.push(linked);
    }
  }
  return { workspace, runner, repos, worktreesLeft };
}

/** Moves `abs` to the quarantine for `why` (git-audit.ts's `Quarantine.move`), giving its finding. */
export type MoveAside = (abs: string, why: string) => GitFinding;

/**
 * What changed in the git state of each repository of `s` since the start (see the module comment), as findings
 * (`hidden: 'state'`, or moved with `move` at close); each change told once, all again when `final`. Never rejects:
 * a repository git cannot read now is named as not checked.
 */
export async function auditGitState(s: GitStateBaseline, final: boolean, move: MoveAside): Promise<GitFinding[]> {
  const out: GitFinding[] = [];
  for (const r of s.repos) {
    try {
      for (const f of await repoFindings(s, r, final, move)) {
        if (!final && r.told.get(f.key) === f.state) continue;
        r.told.set(f.key, f.state);
        out.push(f.finding);
      }
    } catch (err) {
      out.push({
        path: r.git,
        why: `its HEAD, refs and operation state could NOT be checked${r.where} (${(err as Error).message}); check \`git status\` and \`git log\` by hand`,
        movedTo: undefined,
        unchecked: true,
      });
    }
  }
  if (final && s.worktreesLeft > 0)
    out.push({
      path: s.workspace,
      why: `${s.worktreesLeft} linked worktrees past the first ${MAX_WORKTREES} of a git dir were NOT checked: run \`git status\` in each before you abort or continue what it shows`,
      movedTo: undefined,
      unchecked: true,
    });
  return out;
}

/**
 * All that changed in the git state of `r` (see {@link auditGitState}). A linked worktree's git dir the session
 * removed is named (its checkout's git then fails); its refs are told by its common dir's entry.
 * @throws Error when git cannot read `r`'s refs
 */
async function repoFindings(s: GitStateBaseline, r: StateRepo, final: boolean, move: MoveAside): Promise<Told[]> {
  if (r.linked !== undefined && !fs.existsSync(r.git)) {
    const why = `the session removed the git dir of the linked worktree ${r.linked} (${showName(path.relative(s.workspace, r.git))}): git there no longer finds its repository`;
    return [{ key: 'gone', state: 'gone', finding: named(r.git, why) }];
  }
  const refs = await readRefs(s.runner, r.git);
  const head = readHead(r.git, refs);
  const tips = [...new Set([...r.refs.values(), ...(r.head.oid ? [r.head.oid] : [])])];
  const state = await stateFindings(s, r, refs, tips, final, move);
  // The bisect's refs moved with it are named there, not again as refs the session made or deleted.
  const bisectMoved = state.some((t) => t.key === `part ${BISECT_REFS}`);
  const ownRefs = (t: Told): boolean => !(bisectMoved && t.key.startsWith(`ref ${BISECT_REFS}/`));
  return [
    ...(await headFindings(s, r, head, final)),
    ...(r.linked === undefined ? refFindings(r, refs, head, new Set(tips)).filter(ownRefs) : indexFinding(r)),
    ...logFindings(r, head),
    ...state,
    ...rrFindings(r, final, move),
    ...shallowFindings(r, final, move),
  ];
}

/**
 * `shallow` the session made, changed or removed since the start (gitrepository-layout(5): the commits git takes for
 * ones without parents, as a shallow clone writes them). `git log`, `git merge-base` and `git rebase` then see no
 * history behind a commit it lists: listing the merge that main later reverted makes the person's next `git rebase
 * main` replay the commits that merge brought in (adversary round 34). Named; at close, one the session made or changed
 * is moved (a shallow clone's own, there and unchanged, is left). A linked worktree's git reads its common dir's.
 */
function shallowFindings(r: StateRepo, final: boolean, move: MoveAside): Told[] {
  if (r.linked !== undefined) return [];
  const at = r.files.get('shallow');
  const now = digestOf(r.git, 'shallow');
  if (now?.sha === at?.sha) return [];
  const abs = path.join(r.git, 'shallow');
  if (!now) {
    const why = `the session removed the shallow list${r.where} that was there at the start: git now looks for the parents of the commits it listed, and \`git log\` stops with an error where they are missing`;
    return [{ key: 'shallow', state: 'gone', finding: named(abs, why) }];
  }
  const ids = idsIn(r.git, 'shallow');
  const listed =
    ids.length === 0 ? '' : ` (${ids.slice(0, 3).map(short).join(', ')}${ids.length > 3 ? ` and ${ids.length - 3} more` : ''})`;
  const what = `the session ${at ? 'changed' : 'made'} the shallow list${r.where}${listed}: git takes each commit it lists for one without parents, so \`git log\`, \`git merge-base\` and \`git rebase\` no longer see the history behind it (a rebase then replays the commits of a merge that was reverted)`;
  if (!final) return [{ key: 'shallow', state: now.sha, finding: named(abs, `${what}; review it before you rebase or merge`) }];
  const back = at
    ? '; your clone was shallow at the start: if the session deepened it (`git fetch --deepen`), review the moved file and put it back'
    : '';
  return [
    { key: 'shallow', state: now.sha, finding: move(abs, `${what}; moved so that your git cuts no history on the session's word${back}`) },
  ];
}

/** A linked worktree's `index` the session changed: its next `git commit` there commits what the session staged. */
function indexFinding(r: StateRepo): Told[] {
  const now = digestOf(r.git, 'index');
  if (now?.sha === r.files.get('index')?.sha) return [];
  const why = `the session changed the index${r.where}: \`git commit\` there would commit what it staged; \`git diff --cached\` there shows it, \`git reset\` there unstages it`;
  return [{ key: 'index', state: now?.sha ?? 'gone', finding: named(path.join(r.git, 'index'), why) }];
}

/**
 * `rr-cache/` entries the session made or changed (or the folder itself, made): git's rerere, on by itself while the
 * folder exists, writes their recorded resolution into the person's next conflict of the same text (and stages it
 * with `rerere.autoUpdate`). Named; moved at close.
 */
function rrFindings(r: StateRepo, final: boolean, move: MoveAside): Told[] {
  if (r.linked !== undefined) return [];
  const now = readRr(r.git);
  const abs = path.join(r.git, 'rr-cache');
  const does = `git's rerere would write the conflict resolutions recorded there into your next merge's conflicted files${r.where}`;
  const tell = (key: string, at: string, state: string, why: string): Told => ({
    key,
    state,
    finding: final
      ? move(at, `${why}: ${does}; moved so that your git applies none of them`)
      : named(at, `${why}: ${does}; review it before you merge`),
  });
  if (now === undefined)
    return r.rr === undefined || r.rr.has('.') ? [] : [{ key: 'rr-cache', state: 'gone', finding: named(abs, rrGone(r, r.rr.size)) }];
  if (r.rr === undefined || r.rr.has('.') || now.entries.has('.')) {
    const state = createHash('sha256')
      .update([...now.entries].map(([n, d]) => `${n} ${d.sha}`).join('\n'))
      .digest('hex');
    if (r.rr !== undefined && [...r.rr].every(([n, d]) => now.entries.get(n)?.sha === d.sha) && r.rr.size === now.entries.size) return [];
    return [tell('rr-cache', abs, state, 'the session made rr-cache (which turns rerere on)')];
  }
  const changed = [...now.entries].filter(([n, d]) => r.rr!.get(n)?.sha !== d.sha);
  const out = changed.map(([n, d]) =>
    tell(
      `rr ${n}`,
      path.join(abs, n),
      d.sha,
      `the session ${r.rr!.has(n) ? 'changed' : 'recorded'} the resolution rr-cache/${safeText(showName(n), false)}`,
    ),
  );
  // Entries of the person's gone: looked for on disk, since the first MAX_RR_ENTRIES names shift when others go.
  for (const n of [...r.rr.keys()].filter((x) => !now.entries.has(x) && !fs.lstatSync(path.join(abs, x), { throwIfNoEntry: false })))
    out.push({ key: `rr ${n}`, state: 'gone', finding: named(path.join(abs, n), rrGone(r, 1, n)) });
  if (now.left > r.rrLeft && final)
    out.push({
      key: 'rr more',
      state: String(now.left),
      finding: {
        path: abs,
        why: `${now.left} rr-cache entries past the first ${MAX_RR_ENTRIES} were NOT checked${r.where}`,
        movedTo: undefined,
        unchecked: true,
      },
    });
  return out;
}

/**
 * Why `rr-cache/<name>` (or, without `name`, all of rr-cache with its `count` entries) of `r`, there at the start,
 * is gone: the session deleted a conflict resolution the person recorded, which git's rerere no longer applies. It
 * cannot be made again from here (the audit keeps no copy); the person's own backup or a new resolution can.
 */
function rrGone(r: StateRepo, count: number, name?: string): string {
  const what = name
    ? `your recorded conflict resolution rr-cache/${safeText(showName(name), false)}`
    : `rr-cache with your ${count} recorded conflict resolutions (rerere is off again unless \`rerere.enabled\` is set)`;
  return `the session deleted ${what}${r.where}: git's rerere no longer resolves ${name ? 'that conflict' : 'those conflicts'} for you; resolve ${name ? 'it' : 'them'} again by hand when ${name ? 'it comes' : 'they come'} back`;
}

/** A finding and what it was told for (key and state: told again once the state changes). */
interface Told {
  readonly key: string;
  readonly state: string;
  readonly finding: GitFinding;
}

/** A finding at `abs` that names `why` and is left in place. */
const named = (abs: string, why: string): GitFinding => ({ path: abs, why, movedTo: undefined, hidden: 'state' });

/** `oid` short, as git shows it. */
const short = (oid: string | undefined): string => (oid ? oid.slice(0, 12) : 'no commit');

/** A branch's name as the person types it (`refs/heads/main` → `main`), escaped for a note (a session names its refs). */
const branchOf = (ref: string): string => safeText(showName(ref.replace(/^refs\/heads\//, '')), false);

/**
 * (b) HEAD: its branch moved, or HEAD detached or switched, since the start: which commit to which, what `git diff`
 * between them shows, whether the old one is still in the new one's history, and whether the new one reads as the old
 * (same message, authors and dates: only the id differs).
 */
async function headFindings(
  s: GitStateBaseline,
  r: StateRepo,
  head: { text: string; oid: string | undefined },
  final: boolean,
): Promise<Told[]> {
  if (head.text === r.head.text && head.oid === r.head.oid) return [];
  const state = `${head.text} ${head.oid}`;
  // Told already (and not closing): no git is run to say it again.
  if (!final && r.told.get('HEAD') === state) return [];
  const was = /^ref: (\S+)$/.exec(r.head.text)?.[1];
  const now = /^ref: (\S+)$/.exec(head.text)?.[1];
  const from = `${was ? `${branchOf(was)} at ` : 'a detached HEAD at '}${short(r.head.oid)}`;
  const lead =
    r.head.oid === undefined && now === was && now !== undefined
      ? `the session made ${branchOf(now)}'s first commit${r.where}, ${short(head.oid)}`
      : now === was
        ? `the session moved ${now ? branchOf(now) : 'the detached HEAD'}${r.where} from ${short(r.head.oid)} to ${short(head.oid)}`
        : now !== undefined
          ? `the session switched HEAD${r.where} from ${from} to ${branchOf(now)} at ${short(head.oid)}`
          : `the session left HEAD${r.where} detached at ${short(head.oid)} (it was ${from})`;
  const more = r.head.oid && head.oid ? await compareCommits(s.runner, r.git, r.head.oid, head.oid) : '';
  const why = `${lead}${more}; review it before you push or build`;
  return [{ key: 'HEAD', state, finding: named(path.join(r.git, 'HEAD'), why) }];
}

/**
 * What tells the commits `a` (at start) and `b` (now) of `git` apart for the person: the files `git diff a b` names,
 * whether `a` is left out of `b`'s history, and whether `b` reads as `a`. Best effort: '' when git cannot say.
 */
async function compareCommits(runner: Runner, git: string, a: string, b: string): Promise<string> {
  try {
    const names = (await runGit(runner, git, ['diff-tree', '-r', '--no-renames', '--name-only', '-z', a, b]))
      .split('\0')
      .filter((n) => n !== '');
    const shown =
      names.slice(0, MAX_DIFF_NAMES).map(showName).join(', ') +
      (names.length > MAX_DIFF_NAMES ? ` and ${names.length - MAX_DIFF_NAMES} more` : '');
    const parts = [
      names.length > 0 ? `\`git diff ${short(a)} ${short(b)}\` shows: ${shown}` : `no file differs (\`git diff ${short(a)} ${short(b)}\`)`,
    ];
    const left = (await runGit(runner, git, ['rev-list', '-n', '1', a, `^${b}`])).trim() !== '';
    if (left) parts.push(`${short(a)} is no longer in its history`);
    const fmt = '--format=%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd%x00%B%x01';
    const [ma, mb] = (await runGit(runner, git, ['show', '-s', '--date=raw', fmt, a, b])).split('\x01');
    if (left && ma !== undefined && ma.trim() === mb?.trim())
      parts.push(`${short(b)} reads as your ${short(a)} (same message, authors and dates): only the id differs`);
    return ` (${parts.join('; ')})`;
  } catch {
    return '';
  }
}

/**
 * (c) The refs other than HEAD's branch that the session made, moved or deleted (`refs/stash` among them), past
 * {@link MAX_NAMED_REFS} counted; a new ref at a commit a ref or HEAD named at start (`tips`: `git worktree add -b`,
 * `git branch topic`) names nothing new and is left out.
 */
function refFindings(r: StateRepo, refs: ReadonlyMap<string, string>, head: { text: string }, tips: ReadonlySet<string>): Told[] {
  const own = /^ref: (\S+)$/.exec(head.text)?.[1];
  const changed = [...new Set([...r.refs.keys(), ...refs.keys()])]
    .filter((n) => n !== own && r.refs.get(n) !== refs.get(n) && !(r.refs.get(n) === undefined && tips.has(refs.get(n)!)))
    .sort();
  const say = (n: string): string => {
    const [a, b, m] = [r.refs.get(n), refs.get(n), safeText(showName(n), false)];
    const what =
      a === undefined
        ? `made ${m} at ${short(b)}`
        : b === undefined
          ? `deleted ${m} (was ${short(a)})`
          : `moved ${m} from ${short(a)} to ${short(b)}`;
    const stash = n === 'refs/stash' ? ": `git stash pop` would apply the session's stash, not yours" : '';
    return `the session ${what}${r.where}${stash}`;
  };
  const told = changed
    .slice(0, MAX_NAMED_REFS)
    .map((n) => ({ key: `ref ${n}`, state: refs.get(n) ?? 'gone', finding: named(path.join(r.git, n), say(n)) }));
  if (changed.length > MAX_NAMED_REFS) {
    const state = createHash('sha256')
      .update(changed.map((n) => `${n} ${refs.get(n)}`).join('\n'))
      .digest('hex');
    const why = `the session made, moved or deleted ${changed.length - MAX_NAMED_REFS} more refs${r.where} (\`git for-each-ref\` lists them)`;
    told.push({ key: 'refs more', state, finding: named(path.join(r.git, 'refs'), why) });
  }
  return told;
}

/** Reflogs ({@link LOGS}, HEAD's branch's) rewritten since the start, not only appended to: `git reflog` and `@{n}` name what the session wrote. */
function logFindings(r: StateRepo, head: { text: string }): Told[] {
  const out: Told[] = [];
  for (const rel of statePaths(head.text).filter((p) => p.startsWith('logs/'))) {
    const at = r.files.get(rel);
    if (!at?.bytes) continue;
    const now = digestOf(r.git, rel, true);
    if (now?.sha === at.sha || (now?.bytes && now.bytes.subarray(0, at.bytes.length).equals(at.bytes))) continue;
    const why = `the session rewrote the reflog ${rel}${r.where}: \`git reflog\`, \`@{1}\` and \`git stash list\` may name its commits as yours`;
    out.push({ key: `log ${rel}`, state: now?.sha ?? 'gone', finding: named(path.join(r.git, rel), why) });
  }
  return out;
}

/** What a state file or folder leaves the person's git to do: the commits it names and the sentence saying what obeys them. */
interface StateRead {
  /** Commit ids the state names that an abort, undo or continue moves to (checked against the refs at start). */
  readonly commits: readonly string[];
  /** What the person's git does with it, in a clause: "`git rebase --abort` would reset main to X". */
  readonly does: string;
  /** `exec` lines of its todo (run at `git rebase --continue`). */
  readonly execs: readonly string[];
}

/**
 * The text of the regular file `rel` of `git` (at most `max` bytes; '' when missing or no regular file), its folder
 * opened without following a symlink (a session's `rebase-merge` symlink to a folder only root reads is not read
 * through), as is the file.
 */
function readIn(git: string, rel: string, max: number): string {
  const c = fs.constants;
  let fd: number | undefined;
  try {
    fd = fs.openSync(path.join(git, path.dirname(rel)), c.O_RDONLY | c.O_DIRECTORY | c.O_NOFOLLOW);
    return tryReadRegular(`/proc/self/fd/${fd}/${path.basename(rel)}`, max, false)?.bytes.toString('utf8') ?? '';
  } catch {
    return '';
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** The first line of `rel` in `git`, trimmed, as the findings show it (escaped, at most 200 characters). */
const line1 = (git: string, rel: string): string => readIn(git, rel, 4096).split('\n')[0]!.trim().slice(0, 200);

/** The object ids at the starts of the lines of `rel` in `git` (MERGE_HEAD's, FETCH_HEAD's). */
const idsIn = (git: string, rel: string): string[] =>
  readIn(git, rel, MAX_STATE_BYTES)
    .split('\n')
    .map((l) => /^([0-9a-f]{40,64})\b/.exec(l)?.[1])
    .filter((x): x is string => x !== undefined);

/** The `exec` lines of a rebase or sequencer todo `rel` of `git`. */
const execsIn = (git: string, rel: string): string[] =>
  readIn(git, rel, MAX_STATE_BYTES)
    .split('\n')
    .filter((l) => /^\s*(x|exec)\s/.test(l))
    .map((l) => safeText(showName(l.trim().slice(0, 200)), false));

/** What the state `rel` of `git` (one of {@link STATE_FILES} or {@link STATE_DIRS}, there now) leaves the person's git to do; `refs` resolve a branch name. */
function readState(git: string, rel: string, refs: ReadonlyMap<string, string>): StateRead {
  const ids = (xs: string[]): string[] => xs.filter((x) => /^[0-9a-f]{40,64}$/.test(x));
  if (rel === 'rebase-merge' || rel === 'rebase-apply') {
    const orig = line1(git, `${rel}/orig-head`);
    const branch = branchOf(line1(git, `${rel}/head-name`) || 'HEAD');
    const execs = [...execsIn(git, `${rel}/git-rebase-todo`), ...execsIn(git, `${rel}/todo`)];
    return { commits: ids([orig]), does: `\`git rebase --abort\` would reset ${branch} to ${short(orig)}`, execs };
  }
  if (rel === 'sequencer') {
    const head = line1(git, 'sequencer/head');
    return {
      commits: ids([head]),
      does: `\`git cherry-pick --abort\` (or \`git revert --abort\`) would reset HEAD to ${short(head)}`,
      execs: execsIn(git, 'sequencer/todo'),
    };
  }
  if (rel === 'BISECT_START') {
    const start = line1(git, rel);
    const oid = /^[0-9a-f]{40,64}$/.test(start) ? start : refs.get(`refs/heads/${start}`);
    return {
      commits: ids([oid ?? '']),
      does: `\`git bisect reset\` would check out ${/^[0-9a-f]+$/.test(start) ? short(start) : safeText(showName(start), false)}`,
      execs: [],
    };
  }
  const listed = rel === 'AUTO_MERGE' ? [] : idsIn(git, rel);
  const does: Record<string, string> = {
    ORIG_HEAD: `\`git reset --hard ORIG_HEAD\` (the undo of a rebase, merge or reset) would reset to ${short(listed[0])}`,
    MERGE_HEAD: `\`git commit\` would record a merge of ${listed.map(short).join(', ')}`,
    CHERRY_PICK_HEAD: `\`git commit\` or \`git cherry-pick --continue\` would commit as ${short(listed[0])}`,
    REVERT_HEAD: `\`git commit\` or \`git revert --continue\` would commit a revert of ${short(listed[0])}`,
    FETCH_HEAD: `\`git merge FETCH_HEAD\` would merge ${listed.slice(0, 3).map(short).join(', ')}`,
    // The reader of each, as git's documentation names it (git-merge, git-bisect, gitrevisions).
    AUTO_MERGE:
      'a conflicted merge writes it (the tree it merged, conflicts included), and `git diff AUTO_MERGE` compares your files with it',
    BISECT_EXPECTED_REV: `\`git bisect good\` or \`bad\` takes the commit checked out for ${short(listed[0])}`,
    BISECT_HEAD: `\`git bisect\` (started with \`--no-checkout\`) tests ${short(listed[0])} in place of HEAD`,
    BISECT_LOG: '`git bisect log` shows it and `git bisect replay` replays it',
    BISECT_TERMS: '`git bisect` takes its names of the good and bad commits from it',
    BISECT_NAMES: '`git bisect` searches only the commits that change the paths it lists',
    BISECT_ANCESTORS_OK: '`git bisect` skips checking that the good commits are ancestors of the bad one',
    BISECT_FIRST_PARENT: '`git bisect` follows only the first parent of each merge',
  };
  return { commits: listed, does: does[rel] ?? `your next git command there may read it (${rel})`, execs: [] };
}

/** Whether the commit `oid` is reachable from `tips` (the refs and HEAD at start) in `git`; false when git cannot say (no such commit). */
async function reachable(runner: Runner, git: string, oid: string, tips: readonly string[]): Promise<boolean> {
  try {
    const input = [oid, ...tips.map((t) => `^${t}`)].join('\n') + '\n';
    return (await runGit(runner, git, ['rev-list', '-n', '1', '--stdin'], input)).trim() === '';
  } catch {
    return false;
  }
}

/** The operation in progress a state path is, for the person. */
const OPERATION: Record<string, string> = {
  'rebase-merge': 'a rebase in progress',
  'rebase-apply': 'a rebase (or `git am`) in progress',
  sequencer: 'a cherry-pick or revert in progress',
  MERGE_HEAD: 'a merge in progress',
  CHERRY_PICK_HEAD: 'a cherry-pick in progress',
  REVERT_HEAD: 'a revert in progress',
  BISECT_START: 'a bisect in progress',
};

/** A state file or folder the session made or changed, as {@link stateFindings} read it. */
interface Changed {
  readonly rel: string;
  readonly sha: string;
  /** The finding's words: what the session left and what the person's git does with it. */
  readonly left: string;
  /** Whether it is moved at close on its own account: it names a commit not the person's, or holds an `exec` line. */
  readonly foreign: boolean;
}

/**
 * (a) The state files and folders the session made or changed since the start: named with what the person's git would
 * do with them; at close (`final`), one that names a commit not reachable from the refs at start, or holds an `exec`
 * line, is moved with `move` instead, with every other part of its operation ({@link OPERATION_PARTS}), and the
 * finding says what its abort would have done and what the person runs afterwards.
 */
async function stateFindings(
  s: GitStateBaseline,
  r: StateRepo,
  refs: ReadonlyMap<string, string>,
  tips: readonly string[],
  final: boolean,
  move: MoveAside,
): Promise<Told[]> {
  const out: Told[] = [];
  const changed: Changed[] = [];
  for (const rel of [...STATE_DIRS, ...STATE_FILES]) {
    const now = digestOf(r.git, rel);
    if (now?.sha === r.files.get(rel)?.sha || (!final && r.told.get(`state ${rel}`) === (now?.sha ?? 'gone'))) continue;
    if (now) {
      changed.push({ rel, sha: now.sha, ...(await describeState(s, r, rel, refs, tips)) });
      continue;
    }
    const why = `the session ended ${OPERATION[rel] ?? rel}${r.where} that was there at the start`;
    out.push({ key: `state ${rel}`, state: 'gone', finding: named(path.join(r.git, rel), why) });
  }
  // At close, the operations one of whose parts is moved go whole: every part there now.
  const ops = new Set(final ? changed.flatMap((c) => (c.foreign && OPERATION_OF[c.rel] ? [OPERATION_OF[c.rel]!] : [])) : []);
  const parts = new Set([...ops].flatMap((o) => OPERATION_PARTS[o]!));
  const there = new Map([...ops].map((o) => [o, partsThere(r.git, o)]));
  for (const c of changed) {
    const abs = path.join(r.git, c.rel);
    const op = OPERATION_OF[c.rel];
    let why: string;
    if (final && c.foreign) {
      const along = (op ? there.get(op)! : []).filter((p) => p !== c.rel);
      why = `${c.left}; moved${along.length > 0 ? ` with ${along.join(', ')}` : ''} so that your git has nothing of it to obey${op ? `; ${afterMove(op, r)}` : ''}`;
    } else if (final && parts.has(c.rel)) why = `${c.left}; moved with the rest of the operation it belongs to`;
    else {
      out.push({
        key: `state ${c.rel}`,
        state: c.sha,
        finding: named(abs, `${c.left}; review it before you ${OPERATION[c.rel] ? 'abort or continue it' : 'use it'}`),
      });
      continue;
    }
    out.push({ key: `state ${c.rel}`, state: c.sha, finding: move(abs, why) });
  }
  // The parts not named on their own (MERGE_MSG, …) or unchanged since the start, moved with their operation.
  const done = new Set(changed.map((c) => c.rel));
  for (const p of [...parts].filter(
    (x) => !done.has(x) && x !== BISECT_REFS && fs.lstatSync(path.join(r.git, x), { throwIfNoEntry: false }),
  ))
    out.push({
      key: `part ${p}`,
      state: 'moved',
      finding: move(path.join(r.git, p), `part of an operation in progress the session left${r.where}, moved with it`),
    });
  if (parts.has(BISECT_REFS)) out.push(...(await moveBisectRefs(s, r, refs, move)));
  return out;
}

/**
 * The refs of the bisect of `r` that is moved at close ({@link BISECT_REFS}; `refs` as read before the move), moved
 * with it and named one by one with their commits: the loose ones as their folder, to the quarantine; any still there
 * after (packed in `packed-refs`, which `git pack-refs --all` writes) deleted with `git update-ref -d <ref> <id>`
 * (which leaves a ref changed meanwhile alone), each named with the command that makes it again. None when the bisect
 * has no refs.
 */
async function moveBisectRefs(s: GitStateBaseline, r: StateRepo, refs: ReadonlyMap<string, string>, move: MoveAside): Promise<Told[]> {
  const ofBisect = (m: ReadonlyMap<string, string>): [string, string][] => [...m].filter(([n]) => n.startsWith(`${BISECT_REFS}/`));
  const mine = ofBisect(refs);
  if (mine.length === 0) return [];
  const listed = mine.map(([n, oid]) => `${safeText(showName(n), false)} at ${short(oid)}`).join(', ');
  const why = `the bisect's refs ${listed}${r.where} (\`git log --bisect\` and \`git rev-list --bisect\` read them)`;
  const abs = path.join(r.git, BISECT_REFS);
  const moved = fs.lstatSync(abs, { throwIfNoEntry: false }) ? move(abs, `${why}, moved with the rest of the bisect`) : undefined;
  const after = ofBisect((await readRefs(s.runner, r.git).catch(() => undefined)) ?? new Map(mine));
  const gone: string[] = [];
  const kept: string[] = [];
  for (const [n, oid] of after) {
    const shown = safeText(showName(n), false);
    const deleted = await runGit(s.runner, r.git, ['update-ref', '-d', n, oid]).then(
      () => true,
      () => false,
    );
    if (deleted) gone.push(`${shown} deleted from packed-refs (\`git update-ref ${shown} ${oid}\` makes it again)`);
    else kept.push(shown);
  }
  const rest = [...gone, ...(kept.length > 0 ? [`${kept.join(', ')} NOT removed: \`git update-ref -d\` each`] : [])].join('; ');
  const finding = moved ? { ...moved, why: `${moved.why}${rest ? `; ${rest}` : ''}` } : named(abs, `${why}: ${rest}`);
  return [{ key: `part ${BISECT_REFS}`, state: 'moved', finding }];
}

/** The parts of operation `op` ({@link OPERATION_PARTS}) there now in `git`. */
const partsThere = (git: string, op: string): string[] =>
  OPERATION_PARTS[op]!.filter((p) => fs.lstatSync(path.join(git, p), { throwIfNoEntry: false }) !== undefined);

/**
 * What the person runs once operation `op` of `r` was moved whole: its abort (`git merge --abort`, …) no longer applies,
 * since git finds no operation left to abort; the conflicted files and index stay as the session left them, and HEAD
 * where it put it; `git reset --merge` is what an abort does to them (without its reset to a commit the session named),
 * and the branch (or commit) HEAD was at when the session started is where it goes back to.
 */
function afterMove(op: string, r: StateRepo): string {
  const branch = /^ref: refs\/heads\/(\S+)$/.exec(r.head.text)?.[1];
  const back = branch
    ? `git switch ${branchOf(branch)}`
    : r.head.oid
      ? `git switch --detach ${short(r.head.oid)}`
      : 'git switch <your branch>';
  const there = r.linked !== undefined ? ` (in ${r.linked})` : '';
  if (op === 'bisect')
    return `\`git bisect reset\` has nothing left to reset: run \`${back}\`${there} to take HEAD back to where it was at the start`;
  if (op === 'rebase')
    return `\`git rebase --abort\` no longer applies (no rebase is left to abort): run \`git reset --merge\` then \`${back}\`${there} to drop what the rebase left in the index and files and take HEAD back to where it was at the start`;
  const abort =
    op === 'merge'
      ? '`git merge --abort` no longer applies (no merge is left to abort)'
      : '`git cherry-pick --abort` and `git revert --abort` no longer apply (nothing is left to abort)';
  return `${abort}: run \`git reset --merge\`${there} to put the index and the conflicted files back at HEAD, as the abort would have`;
}

/** What the state `rel` of `r` (there now) leaves the person's git to do, and whether it names a commit not reachable from `tips` or an `exec` line. */
async function describeState(
  s: GitStateBaseline,
  r: StateRepo,
  rel: string,
  refs: ReadonlyMap<string, string>,
  tips: readonly string[],
): Promise<{ left: string; foreign: boolean }> {
  const st = readState(r.git, rel, refs);
  const unread = unreadPart(r.git, rel);
  const foreign: string[] = [];
  for (const c of st.commits) if (!(await reachable(s.runner, r.git, c, tips))) foreign.push(c);
  const whose =
    st.commits.length === 0
      ? ''
      : foreign.length > 0
        ? ` (${foreign.map(short).join(', ')}: not a commit of yours at the start)`
        : ' (a commit of yours at the start)';
  const exec =
    st.execs.length > 0
      ? `; its todo runs ${st.execs
          .slice(0, 3)
          .map((e) => `\`${e}\``)
          .join(', ')} at \`git rebase --continue\``
      : '';
  const more = unread ? `; ${unread}, so what your git would do with it was NOT all read` : '';
  return {
    left: `the session left ${OPERATION[rel] ?? rel}${r.where}: ${st.does}${whose}${exec}${more}`,
    foreign: foreign.length > 0 || st.execs.length > 0 || unread !== undefined,
  };
}

/**
 * Why the state `rel` of `git` is not all read by {@link readState} while git reads it whole: it (or a file in its
 * folder) is a symlink or no regular file (git follows it; the audit does not), or longer than {@link MAX_STATE_BYTES}
 * (a todo whose `exec` line follows 4 MiB of comments: adversary round 32). Undefined when all of it is read.
 */
function unreadPart(git: string, rel: string): string | undefined {
  const abs = path.join(git, rel);
  const st = fs.lstatSync(abs, { throwIfNoEntry: false });
  if (!st) return undefined;
  const check = (s: fs.Stats, name: string): string | undefined =>
    !s.isFile()
      ? `${name} is a symlink or no regular file`
      : s.size > MAX_STATE_BYTES
        ? `${name} is longer than the ${MAX_STATE_BYTES >> 20} MiB the audit reads`
        : undefined;
  if (!st.isDirectory()) return check(st, rel);
  let names: string[];
  try {
    names = fs.readdirSync(abs).sort();
  } catch {
    return `${rel} could not be listed`;
  }
  for (const name of names) {
    const e = fs.lstatSync(path.join(abs, name), { throwIfNoEntry: false });
    const why = e && check(e, `${rel}/${safeText(showName(name), false)}`);
    if (why) return why;
  }
  return undefined;
}
