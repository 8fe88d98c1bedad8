/**
 * What a command's first word resolves to in the session shell right now, asked before an
 * approval rule lets the command run (a rule approves a program of the system, never a file,
 * function or alias of the same name the session made; CASES C33).
 *
 * The probe is a command of its own sent through the control protocol (protocol.ts), so a job
 * of the session cannot answer for bash. Its text runs in a subshell (nothing it does stays)
 * in POSIX mode, where the special builtins (`readonly`, `export`, `exit`, `eval`) are found
 * before any function, quoted so no alias applies. `(\readonly -f NAME)` succeeds exactly when
 * NAME is a function, so it tells functions apart without calling any named command. A
 * function named `builtin` refuses the probe: the bookkeeping before every command calls
 * `\builtin`, so such a function runs code between the probe and the command and could change
 * what the word names in between. Without one, nothing of the session runs in the shell between
 * the probe and the command (traps are disabled, jobs are other processes), so what the shell
 * holds (functions, aliases, hashed paths, variables) is the same for the command. Jobs can change
 * files meanwhile, though: so the answer counts only when no folder bash looks in before it finds
 * the program is one a process of the session can change ({@link searchRefusal}).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ansiCQuote } from './protocol';

/**
 * Exported variables that may differ from the session's starting environment when a rule runs a program: `PWD`
 * and `OLDPWD` (bash keeps them in step with `cd`; a program reads them as names of directories, not as code),
 * `SHLVL` (bash raises it when it starts), `_` (bash sets it to the last command's last word), `COLUMNS` and
 * `LINES` (the terminal's size), and `PATH` (judged entry by entry: {@link searchRefusal}). Any other exported
 * variable added or changed since the start can make a system program run other code (`LD_PRELOAD`, `BASH_ENV`,
 * `PYTHONPATH`, `PERL5LIB`, `NODE_OPTIONS`, `GIT_EXEC_PATH`, `GIT_CONFIG_*`, `GIT_SSH_COMMAND`, `PAGER`,
 * `EDITOR`, …; no list of them is whole), so then a person decides.
 */
export const VARIABLES_THAT_MAY_CHANGE: readonly string[] = ['PWD', 'OLDPWD', 'SHLVL', '_', 'COLUMNS', 'LINES', 'PATH'];

/**
 * What the probe learned of one word: `type -at` kinds in order, `type -P` (a hashed path first, else the PATH
 * search) as `path`, `type -P` after `hash -r` (the PATH search alone) as `searched`, whether it is a function,
 * the shell's `PATH` now, its exported variables (`undefined` value: a line of `export -p` that could not be read),
 * the names of its exported functions and its option letters.
 */
export interface ProbeAnswer {
  kinds: string[];
  path: string | undefined;
  searched: string | undefined;
  function: boolean;
  searchPath: string;
  exported: Map<string, string | undefined>;
  exportedFunctions: string[];
  /** The shell's option letters (`$-`): `x` while it traces commands (`set -x`). */
  flags: string;
}

/** The parts of the probe's answer, in order, each after a line `<nonce>:<part>`. */
const PARTS = ['type', 'path', 'search', 'fn', 'PATH', 'env', 'fnx', 'opts', 'end'] as const;

/**
 * The probe's command text for `word` (sent like a command; it changes nothing in the shell)
 * and the nonce that frames its answer. `hash -r` runs in the probe's subshell only.
 */
export function probeCommand(word: string): { text: string; nonce: string } {
  const nonce = `AJP${randomBytes(12).toString('hex')}`;
  const w = ansiCQuote(word);
  const mark = (part: (typeof PARTS)[number]): string => `\\builtin printf '%s\\n' ${nonce}:${part}`;
  const inner = [
    '(\\readonly -f builtin) 2>/dev/null && \\exit 3',
    mark('type'),
    `\\builtin type -at -- ${w}`,
    mark('path'),
    `\\builtin type -P -- ${w}`,
    mark('search'),
    '\\builtin hash -r 2>/dev/null',
    `\\builtin type -P -- ${w}`,
    mark('fn'),
    `(\\readonly -f -- ${w}) 2>/dev/null && \\builtin printf '%s\\n' function`,
    mark('PATH'),
    `\\builtin printf '%s\\n' "$PATH"`,
    mark('env'),
    '\\export -p',
    mark('fnx'),
    '\\export -pf',
    mark('opts'),
    `\\builtin printf '%s\\n' "$-"`,
    mark('end'),
    '',
  ].join('\n');
  const text = `(POSIXLY_CORRECT=y && 2>/dev/null 9<"/proc/self/stat\${SHELLOPTS/*posix*/}" && \\eval -- ${ansiCQuote(inner)})`;
  return { text, nonce };
}

/**
 * Reads the probe's output (as the shell wrote it, not redacted), or undefined when it is not whole and framed
 * (anything before the first mark refuses it).
 */
export function parseProbe(output: string, nonce: string): ProbeAnswer | undefined {
  const parts = PARTS.map((p) => `${nonce}:${p}\n`);
  if (!output.startsWith(parts[0]!) || !output.endsWith(parts[parts.length - 1]!)) return undefined;
  const at = parts.map((p) => output.indexOf(p));
  if (at.some((a, i) => a < 0 || (i > 0 && a < at[i - 1]!))) return undefined;
  const raw = (i: number): string => output.slice(at[i]! + parts[i]!.length, at[i + 1]);
  const between = (i: number): string[] =>
    raw(i)
      .split('\n')
      .filter((l) => l !== '');
  const exported = new Map<string, string | undefined>();
  for (const line of between(5)) {
    const m = /^(?:export|declare -x) ([A-Za-z_][A-Za-z0-9_]*)(=.*)?$/.exec(line);
    if (!m) exported.set(`(a line of export -p: ${JSON.stringify(line.slice(0, 40))})`, undefined);
    else if (m[2] !== undefined) exported.set(m[1]!, shellValue(m[2].slice(1)));
  }
  return {
    kinds: between(0),
    path: between(1)[0],
    searched: between(2)[0],
    function: between(3).includes('function'),
    searchPath: raw(4).replace(/\n$/, ''),
    exported,
    exportedFunctions: between(6).map((l) => l.replace(/^(?:export|declare) -f[a-z]* /, '')),
    flags: between(7)[0] ?? '',
  };
}

/** Escapes of bash's `$'…'` quoting (what `export -p` writes for a value with a character that is not printable). */
const ANSI_C_ESCAPES: Record<string, number> = {
  a: 7,
  b: 8,
  e: 27,
  E: 27,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
  '\\': 92,
  "'": 39,
  '"': 34,
  '?': 63,
};

/**
 * The value a word of `export -p` stands for: `"…"` (backslash before `"`, `\\`, `$`, `` ` ``) or `$'…'` (C
 * escapes, octal and hex bytes, decoded as UTF-8); undefined when it is neither or does not decode.
 */
export function shellValue(word: string): string | undefined {
  if (word.length >= 2 && word.startsWith('"') && word.endsWith('"')) return word.slice(1, -1).replace(/\\([\\"$`])/g, '$1');
  if (!(word.length >= 3 && word.startsWith("$'") && word.endsWith("'"))) return undefined;
  const bytes: number[] = [];
  const body = word.slice(2, -1);
  for (let i = 0; i < body.length;) {
    const c = body[i]!;
    if (c !== '\\') {
      const cp = body.codePointAt(i)!;
      const s = String.fromCodePoint(cp);
      bytes.push(...Buffer.from(s, 'utf8'));
      i += s.length;
      continue;
    }
    const rest = body.slice(i + 1);
    const num = /^[0-7]{1,3}/.exec(rest) ?? /^x[0-9a-fA-F]{1,2}/.exec(rest);
    if (num) {
      bytes.push(num[0].startsWith('x') ? parseInt(num[0].slice(1), 16) : parseInt(num[0], 8) & 0xff);
      i += 1 + num[0].length;
    } else if (rest[0] !== undefined && rest[0] in ANSI_C_ESCAPES) {
      bytes.push(ANSI_C_ESCAPES[rest[0]]!);
      i += 2;
    } else return undefined;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
}

/**
 * The exported variables of `exported` (a probe's) added or changed since `start` (the environment the session's
 * shell started with), but for {@link VARIABLES_THAT_MAY_CHANGE}, in order; a variable exported at the start and
 * no longer is left out (the program then runs as it would without it).
 */
export function changedVariables(exported: ReadonlyMap<string, string | undefined>, start: Readonly<Record<string, string>>): string[] {
  return [...exported]
    .filter(
      ([name, value]) =>
        !VARIABLES_THAT_MAY_CHANGE.includes(name) && (value === undefined || !Object.hasOwn(start, name) || start[name] !== value),
    )
    .map(([name]) => name);
}

/** Whether the absolute path `p` is `dir` or below it. */
function inside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/**
 * What the absolute path `target` names for bash: looked up one component at a time under `root` (the shell's root
 * as the worker reaches it, `/proc/<bash pid>/root`, so in the sandbox's mounts, not the worker's), every symlink's
 * target read there and taken again from that root (at most 40). `real` is the path in the shell's view, `folders`
 * every folder a name was looked up in (the last one too when the path names a folder), `found` whether it exists.
 * A path through `/proc` is refused: its names (`/proc/<pid>/cwd`, `/proc/self`) depend on who reads them, and the
 * worker reads them in its own pid namespace. Refused also: more than 40 symlinks, a root the worker cannot read.
 */
export function lookUp(root: string, target: string): { real: string; folders: string[]; found: boolean } | { refuse: string } {
  const folders: string[] = [];
  let at = '/';
  let names = target.split('/');
  for (let hops = 0; ;) {
    let name: string | undefined;
    while ((name = names.shift()) !== undefined && (name === '' || name === '.'));
    if (!folders.includes(at)) folders.push(at);
    if (name === undefined) return { real: at, folders, found: true };
    if (name === '..') {
      at = path.dirname(at);
      continue;
    }
    const next = path.join(at, name);
    if (inside(next, '/proc')) return { refuse: `${target} goes through /proc, whose names bash and the worker do not read alike` };
    let st: fs.Stats;
    try {
      st = fs.lstatSync(root + next);
    } catch {
      if (at === '/' && !fs.existsSync(root + '/')) return { refuse: `the shell's root (${root}) cannot be read` };
      return { real: path.join(next, ...names), folders, found: false };
    }
    if (st.isSymbolicLink()) {
      if (++hops > 40) return { refuse: `${target} has too many symlinks` };
      const link = fs.readlinkSync(root + next);
      if (link.startsWith('/')) at = '/';
      names = [...link.split('/'), ...names];
    } else if (st.isDirectory()) at = next;
    else return { real: next, folders, found: names.every((n) => n === '' || n === '.') };
  }
}

/**
 * Why the session could change what the absolute path `target` names between the probe and the command, or
 * undefined when it cannot: the path is looked up as bash would ({@link lookUp} under `root`), and every folder a
 * name is looked up in must be root's alone (owned by root, writable by neither group nor others, which an ACL
 * granting write shows in the group bits, as the shell sees it: the session's private `/tmp` and `/dev/shm` are
 * not) and outside `workspace`, `/tmp`, `/var/tmp` and `/dev/shm`. A name missing in such a folder cannot appear
 * there either. Not absolute, or through `/proc`: a reason.
 */
export function changeableLookup(target: string, workspace: string, root: string): string | undefined {
  if (!target.startsWith('/')) return `${target === '' ? 'an empty entry' : target} is looked up from the working directory`;
  const walked = lookUp(root, target);
  if ('refuse' in walked) return walked.refuse;
  const spaces = [workspace, realIn(root, workspace), '/tmp', '/var/tmp', '/dev/shm'];
  for (const dir of walked.folders) {
    let st: fs.Stats;
    try {
      st = fs.statSync(root + dir);
    } catch {
      return `${dir} cannot be read`;
    }
    if (spaces.some((s) => inside(dir, s)) || st.uid !== 0 || (st.mode & 0o022) !== 0) return `${dir} is not root's alone`;
  }
  return undefined;
}

/** `p`'s real path in the shell's view under `root` ({@link lookUp}), or `p` itself when it cannot be resolved. */
function realIn(root: string, p: string): string {
  const walked = lookUp(root, p);
  return 'real' in walked && walked.found ? walked.real : p;
}

/**
 * Why bash's search of `searchPath` (the shell's `PATH` now) for `word` (no slash) could find another file than
 * `found` (what it found) by the time the command runs, or undefined when it cannot: every entry searched before
 * `found`'s and that one must be absolute (an empty or relative entry is looked up from the working directory)
 * and a folder the session cannot change ({@link changeableLookup}), so no file can appear earlier in the search.
 * Entries are matched as bash joins them (`entry/word`, or `entry` + `word` when it ends with `/`).
 */
export function searchRefusal(word: string, found: string, searchPath: string, workspace: string, root: string): string | undefined {
  for (const entry of searchPath.split(':')) {
    const why = changeableLookup(entry, workspace, root);
    if (why) return `the shell's PATH searches ${entry === '' ? 'an empty entry' : entry} for ${word} first, and ${why}`;
    if ((entry.endsWith('/') ? entry + word : `${entry}/${word}`) === found) return undefined;
  }
  return `${found} is not in a folder of the shell's PATH (${searchPath})`;
}

/**
 * Why the file `resolved` (as `type -P` printed it, relative to `cwd` when not absolute) is not a
 * program of the system, or undefined when it is: looked up as bash would ({@link lookUp} under `root`,
 * so not through `/proc`), its real path must lie in a folder of the session's starting PATH
 * (`searchPath`, sessionSearchPath in env.ts, resolved the same way), outside `workspace`, and it and
 * every folder above it must belong to root and be writable by neither group nor others as the shell
 * sees them (so the session's user cannot replace it; the session's private `/tmp` is its own).
 */
export function notSystemProgram(resolved: string, cwd: string, searchPath: string, workspace: string, root: string): string | undefined {
  const walked = lookUp(root, path.resolve(cwd, resolved));
  if ('refuse' in walked) return `${resolved}, but ${walked.refuse}`;
  if (!walked.found) return `${resolved} cannot be resolved`;
  const real = walked.real;
  if (inside(real, workspace) || inside(real, realIn(root, workspace))) return `${real}, a file of the workspace`;
  const dirs = searchPath.split(':').flatMap((d) => {
    const w = d.startsWith('/') ? lookUp(root, d) : undefined;
    return w && 'real' in w && w.found ? [w.real] : [];
  });
  if (!dirs.includes(path.dirname(real))) return `${real}, not in a folder of the session's starting PATH (${searchPath})`;
  for (let p = real; ; p = path.dirname(p)) {
    let st: fs.Stats;
    try {
      st = fs.statSync(root + p);
    } catch {
      return `${real} cannot be read`;
    }
    if (st.uid !== 0 || (st.mode & 0o022) !== 0) return `${real}, which the session could replace (${p} is not root's alone)`;
    if (p === '/') return undefined;
  }
}

/**
 * The configuration folders a program reads from the session's starting environment `env`: `HOME` (its entries
 * whose names start with `.`: `~/.gitconfig`, `~/.config/git/config`, `~/.bashrc`, every other program's dotfile)
 * and `XDG_CONFIG_HOME` (all its entries), when absolute. Map from folder to whether all entries count.
 */
export function configFolders(env: Readonly<Record<string, string>>): Map<string, boolean> {
  const folders = new Map<string, boolean>();
  if (env.HOME?.startsWith('/')) folders.set(env.HOME, false);
  if (env.XDG_CONFIG_HOME?.startsWith('/')) folders.set(env.XDG_CONFIG_HOME, true);
  return folders;
}

/**
 * The configuration entries of `folders` ({@link configFolders}) as bash's programs see them (under `root`, the
 * shell's root: {@link lookUp}): `<folder>/<name> <inode> <change time ms>` for each entry that counts, sorted. A
 * folder missing or through `/proc` gives none. Read when the shell starts and again before a rule runs a program.
 */
export function configEntries(root: string, folders: ReadonlyMap<string, boolean>): string[] {
  const out: string[] = [];
  for (const [folder, all] of folders) {
    const walked = lookUp(root, folder);
    if ('refuse' in walked || !walked.found) continue;
    let names: string[];
    try {
      names = fs.readdirSync(root + walked.real);
    } catch {
      continue;
    }
    for (const name of names.filter((n) => all || n.startsWith('.'))) {
      const st = fs.lstatSync(root + path.join(walked.real, name), { throwIfNoEntry: false });
      out.push(`${path.join(folder, name)} ${st?.ino ?? 0} ${st?.ctimeMs ?? 0}`);
    }
  }
  return out.sort();
}

/**
 * Why a program could read configuration the session wrote: the entries of `now` ({@link configEntries}) not in
 * `start` (added or changed since the shell started), named; undefined when there are none. A program reads its
 * configuration from the session's HOME (`git` runs `core.fsmonitor`, `core.pager`, an alias or an `include`d file
 * of `~/.gitconfig`), and the session can write there (in the sandbox HOME is its private `/tmp`), so then a person
 * decides. An entry removed since the start is left out (the program then reads less).
 */
export function configRefusal(now: readonly string[], start: readonly string[]): string | undefined {
  const added = now.filter((e) => !start.includes(e)).map((e) => e.slice(0, e.indexOf(' ')));
  if (added.length === 0) return undefined;
  return `${added.join(', ')} ${added.length === 1 ? 'is' : 'are'} new or changed since the session started, configuration a program reads (git's ~/.gitconfig can run any command)`;
}
