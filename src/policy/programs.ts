/**
 * The read-only programs and, per program, the ALLOWLIST of its options
 * (rules (e) and (f) of {@link decideApproval}). An option that is not listed
 * asks, whatever it does; a program that cannot be given a tight list is not
 * here at all. Names and meanings are those of GNU coreutils 9.1, grep 3.8,
 * findutils 4.9, file 5.44 and the bash 5.2 builtins (`echo`, `pwd`, `true`,
 * `false`); test/unit/policy checks every long option name against the
 * installed program's `--help`, because getopt_long accepts unambiguous
 * abbreviations and a listed name that is not a real option could abbreviate
 * a dangerous one (`tail --fol` is `--follow`).
 *
 * Left out on purpose: wrappers that run another program (`env`, `timeout`,
 * `nice`, `nohup`, `xargs`, `command`, `exec`, `bash`, `sh`, `time`, `find
 * -exec`), programs that write through an option (`sort -o`, `tree -o`,
 * `date -s`, `uniq` with an output operand), programs that read system state
 * outside the workspace by design (`df`, `ps`), and `git` (config can run
 * programs: pagers, fsmonitor, aliases).
 */

/** What an option's value is: `text` (not a file: a pattern, a number, a format) or `path` (a file the program reads). */
export type ValueKind = 'text' | 'path';

/** One allowed option. */
export interface OptionSpec {
  /** Whether it takes a value: `none`; `required` (`-n 5`, `-n5`, `--lines 5`, `--lines=5`); `optional` (long form only, `--color=WHEN`). */
  takes: 'none' | 'required' | 'optional';
  /** What the value is. @default 'text' */
  value?: ValueKind;
  /** A tag the operand rules look at (`recursive`, `pattern`). */
  tag?: string;
}

/** How a program's operands (non-option words) are judged. */
export type OperandRule =
  /** every operand is a path the program reads */
  | 'paths'
  /** operands are text the program does not open (`basename`, `echo`) */
  | 'text'
  /** no operand allowed */
  | 'none'
  /** grep: the first operand is the pattern unless `-e`/`-f` gave one; the rest are paths */
  | 'grep';

/** The rules for one program. */
export interface ProgramSpec {
  short: Record<string, OptionSpec>;
  long: Record<string, OptionSpec>;
  operands: OperandRule;
  /**
   * With no path operand: `dot` reads the current directory (an implicit
   * "."), `stdin` reads standard input (asks), `nothing` reads nothing.
   * `grep` reads "." with `-r`, else standard input.
   */
  noOperand: 'dot' | 'stdin' | 'nothing';
  /** `-NUM` is a line count (`head -5`, `tail -5`); `-5f` is not. */
  numericCount?: boolean;
  /** Operands starting with `+` ask: `tail +5f` is the obsolete follow syntax under `_POSIX2_VERSION=199209`. */
  noPlusOperands?: boolean;
}

const NONE: OptionSpec = { takes: 'none' };
const TEXT: OptionSpec = { takes: 'required', value: 'text' };
const PATH: OptionSpec = { takes: 'required', value: 'path' };
const OPTIONAL: OptionSpec = { takes: 'optional', value: 'text' };

/** `flags('la')` → `{ l: NONE, a: NONE }`. */
function flags(letters: string, extra: Record<string, OptionSpec> = {}): Record<string, OptionSpec> {
  const out: Record<string, OptionSpec> = {};
  for (const c of letters) out[c] = NONE;
  return { ...out, ...extra };
}
/** `longs('all size', { sort: TEXT })` → `{ all: NONE, size: NONE, sort: TEXT }`. */
function longs(names: string, extra: Record<string, OptionSpec> = {}): Record<string, OptionSpec> {
  const out: Record<string, OptionSpec> = {};
  for (const n of names.split(/\s+/).filter(Boolean)) out[n] = NONE;
  return { ...out, ...extra };
}

const HEAD_TAIL: Omit<ProgramSpec, 'noPlusOperands'> = {
  short: flags('qvz', { n: TEXT, c: TEXT }),
  long: longs('quiet silent verbose zero-terminated', { lines: TEXT, bytes: TEXT }),
  operands: 'paths',
  noOperand: 'stdin',
  numericCount: true,
};

/**
 * The programs of the allowlist. `find` has a parser of its own ({@link FIND});
 * its entry here only names it. `echo` (the bash builtin) opens and runs
 * nothing and prints every word after its leading `-n`/`-e`/`-E` bundles,
 * `--help` included, so all its words are text.
 */
export const PROGRAMS: Readonly<Record<string, ProgramSpec>> = {
  // -L/--dereference (follows symlinks met while recursing, out of the
  // workspace), -D/--dired left out.
  ls: {
    short: flags('aAbBcCdfFgGhHiklmnNopqQrRsStuUvxXZ1', { I: TEXT, w: TEXT, T: TEXT }),
    long: longs(
      'all almost-all author escape ignore-backups directory file-type group-directories-first no-group ' +
        'human-readable si dereference-command-line dereference-command-line-symlink-to-dir inode kibibytes ' +
        'literal numeric-uid-gid hide-control-chars show-control-chars quote-name reverse recursive size ' +
        'context zero full-time',
      {
        color: OPTIONAL,
        classify: OPTIONAL,
        hyperlink: OPTIONAL,
        'block-size': TEXT,
        format: TEXT,
        hide: TEXT,
        ignore: TEXT,
        'indicator-style': TEXT,
        'quoting-style': TEXT,
        sort: TEXT,
        time: TEXT,
        'time-style': TEXT,
        width: TEXT,
        tabsize: TEXT,
      },
    ),
    operands: 'paths',
    noOperand: 'dot',
  },
  cat: {
    short: flags('AbeEnstTuv'),
    long: longs('show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting'),
    operands: 'paths',
    noOperand: 'stdin',
  },
  // -f/-F/--follow/--retry/--pid/-s read forever or wait on other processes.
  head: { ...HEAD_TAIL },
  tail: { ...HEAD_TAIL, noPlusOperands: true },
  // --files0-from reads the names of the files from a file: paths unknown here.
  wc: {
    short: flags('cmlLw'),
    long: longs('bytes chars lines max-line-length words'),
    operands: 'paths',
    noOperand: 'stdin',
  },
  // -R/--dereference-recursive follows symlinks out of the workspace;
  // -d/-D (directories/devices actions: `-D read` blocks on a FIFO) left out.
  grep: {
    short: flags('EFGPivwxcLloqsbHhnTZzrUaI', {
      e: { takes: 'required', value: 'text', tag: 'pattern' },
      f: { takes: 'required', value: 'path', tag: 'pattern' },
      r: { takes: 'none', tag: 'recursive' },
      m: TEXT,
      A: TEXT,
      B: TEXT,
      C: TEXT,
    }),
    long: longs(
      'extended-regexp fixed-strings basic-regexp perl-regexp ignore-case no-ignore-case invert-match ' +
        'word-regexp line-regexp count files-with-matches files-without-match only-matching quiet silent ' +
        'no-messages byte-offset with-filename no-filename line-number initial-tab null null-data ' +
        'binary text line-buffered',
      {
        recursive: { takes: 'none', tag: 'recursive' },
        regexp: { takes: 'required', value: 'text', tag: 'pattern' },
        file: { takes: 'required', value: 'path', tag: 'pattern' },
        'max-count': TEXT,
        'after-context': TEXT,
        'before-context': TEXT,
        context: TEXT,
        include: TEXT,
        exclude: TEXT,
        'exclude-dir': TEXT,
        'exclude-from': PATH,
        'binary-files': TEXT,
        label: TEXT,
        color: OPTIONAL,
        colour: OPTIONAL,
      },
    ),
    operands: 'grep',
    noOperand: 'stdin',
  },
  stat: {
    short: flags('Lft', { c: TEXT }),
    long: longs('dereference file-system terse', { format: TEXT, printf: TEXT, cached: TEXT }),
    operands: 'paths',
    noOperand: 'stdin',
  },
  // -C (compile: writes NAME.mgc), -m (magic file), -f (names from a file),
  // -s (reads block/char devices), -z/-Z (may run decompressors), -p (sets
  // access times back), -S (no seccomp sandbox), -P left out.
  file: {
    short: flags('bhikLnNr0', { e: TEXT }),
    long: longs('brief mime mime-type mime-encoding dereference no-dereference keep-going raw no-pad print0 extension', {
      exclude: TEXT,
      'exclude-quiet': TEXT,
    }),
    operands: 'paths',
    noOperand: 'stdin',
  },
  // -L/--dereference (follows symlinks met while recursing), --files0-from,
  // -X/--exclude-from left out.
  du: {
    short: flags('abcDHhklmPsSx0', { d: TEXT, B: TEXT }),
    long: longs(
      'all apparent-size bytes total dereference-args human-readable inodes count-links no-dereference ' +
        'null separate-dirs si summarize one-file-system',
      { 'block-size': TEXT, 'max-depth': TEXT, threshold: TEXT, exclude: TEXT, 'time-style': TEXT, time: OPTIONAL },
    ),
    operands: 'paths',
    noOperand: 'dot',
  },
  pwd: { short: flags('LP'), long: {}, operands: 'none', noOperand: 'nothing' },
  echo: { short: flags('neE'), long: {}, operands: 'text', noOperand: 'nothing' },
  basename: {
    short: flags('az', { s: TEXT }),
    long: longs('multiple zero', { suffix: TEXT }),
    operands: 'text',
    noOperand: 'nothing',
  },
  dirname: { short: flags('z'), long: longs('zero'), operands: 'text', noOperand: 'nothing' },
  realpath: {
    short: flags('emLPqsz'),
    long: longs('canonicalize-existing canonicalize-missing logical physical quiet strip no-symlinks zero', {
      'relative-to': PATH,
      'relative-base': PATH,
    }),
    operands: 'paths',
    noOperand: 'stdin',
  },
  whoami: { short: {}, long: {}, operands: 'none', noOperand: 'nothing' },
  uname: {
    short: flags('asnrvmpio'),
    long: longs('all kernel-name nodename kernel-release kernel-version machine processor hardware-platform operating-system'),
    operands: 'none',
    noOperand: 'nothing',
  },
  true: { short: {}, long: {}, operands: 'none', noOperand: 'nothing' },
  false: { short: {}, long: {}, operands: 'none', noOperand: 'nothing' },
  find: { short: {}, long: {}, operands: 'paths', noOperand: 'dot' },
};

/**
 * `find`'s expression, by word: pure tests, operators and printing actions
 * only, with the kind of argument each takes. Left out: every action that
 * runs or writes (`-exec -execdir -ok -okdir -delete -fprint -fprint0
 * -fprintf -fls`), `-files0-from` (starting points from a file), `-newerXY`
 * (reference may be a date or a file), and the global options `-L`,
 * `-follow` (follow symlinks out of the workspace), `-D`, `-O`.
 */
export const FIND: Readonly<Record<string, 'none' | ValueKind>> = {
  // operators
  '!': 'none',
  '-not': 'none',
  '(': 'none',
  ')': 'none',
  '-a': 'none',
  '-and': 'none',
  '-o': 'none',
  '-or': 'none',
  ',': 'none',
  // tests without an argument
  '-true': 'none',
  '-false': 'none',
  '-empty': 'none',
  '-executable': 'none',
  '-readable': 'none',
  '-writable': 'none',
  '-nouser': 'none',
  '-nogroup': 'none',
  // options without an argument
  '-depth': 'none',
  '-xdev': 'none',
  '-mount': 'none',
  '-noleaf': 'none',
  '-daystart': 'none',
  '-ignore_readdir_race': 'none',
  '-noignore_readdir_race': 'none',
  '-warn': 'none',
  '-nowarn': 'none',
  // actions that print to standard output
  '-print': 'none',
  '-print0': 'none',
  '-ls': 'none',
  '-prune': 'none',
  '-quit': 'none',
  '-printf': 'text',
  // tests and options with an argument
  '-name': 'text',
  '-iname': 'text',
  '-path': 'text',
  '-ipath': 'text',
  '-wholename': 'text',
  '-iwholename': 'text',
  '-regex': 'text',
  '-iregex': 'text',
  '-regextype': 'text',
  '-lname': 'text',
  '-ilname': 'text',
  '-type': 'text',
  '-xtype': 'text',
  '-maxdepth': 'text',
  '-mindepth': 'text',
  '-size': 'text',
  '-perm': 'text',
  '-user': 'text',
  '-group': 'text',
  '-uid': 'text',
  '-gid': 'text',
  '-links': 'text',
  '-inum': 'text',
  '-amin': 'text',
  '-cmin': 'text',
  '-mmin': 'text',
  '-atime': 'text',
  '-ctime': 'text',
  '-mtime': 'text',
  '-used': 'text',
  '-fstype': 'text',
  '-context': 'text',
  '-newer': 'path',
  '-anewer': 'path',
  '-cnewer': 'path',
  '-samefile': 'path',
};

/** `find`'s leading global options that are allowed (`-H` follows symlinks on the command line only: the caller's realpath check sees them). */
const FIND_GLOBAL = new Set(['-P', '-H']);

/** What a program's arguments amount to. */
export type ArgsResult = { ok: true; paths: string[] } | { ok: false; reason: string };

/**
 * Judges `args` (argv without argv[0]) of `program` against its allowlist and
 * collects the paths it reads: path operands, path option values, and "."
 * when the program reads the current directory by default.
 * @returns `ok: false` naming the first option or operand not allowed
 */
export function judgeArgs(program: string, args: readonly string[]): ArgsResult {
  if (program === 'find') return judgeFind(args);
  if (program === 'echo') return { ok: true, paths: [] };
  const spec = PROGRAMS[program];
  if (spec === undefined) return { ok: false, reason: `${program} is not on the read-only allowlist` };
  const notAllowed = (opt: string) => ({ ok: false as const, reason: `${program} option ${opt} is not on ${program}'s option allowlist` });
  const paths: string[] = [];
  const operands: string[] = [];
  const tags = new Set<string>();
  let endOfOptions = false;
  const take = (opt: OptionSpec, value: string) => {
    if ((opt.value ?? 'text') === 'path') paths.push(value);
  };
  // GNU tail reads a first argument `-[NUM][bcl]f` in its obsolete form (`tail -cf x`: bytes, then
  // follow forever), not as bundled options; found by an attack test.
  if (spec.noPlusOperands && args[0] !== undefined && /^-\d*[bcl]f+$/.test(args[0])) {
    return { ok: false, reason: `${program} ${args[0]} is the obsolete follow form (it never ends)` };
  }
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (endOfOptions || a === '-' || !a.startsWith('-')) {
      operands.push(a);
      continue;
    }
    if (a === '--') {
      endOfOptions = true;
      continue;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
      const opt = Object.hasOwn(spec.long, name) ? spec.long[name] : undefined;
      if (opt === undefined) return notAllowed(`--${name}`);
      if (opt.tag) tags.add(opt.tag);
      if (opt.takes === 'none') {
        if (eq >= 0) return { ok: false, reason: `${program} option --${name} takes no value` };
      } else if (eq >= 0) {
        take(opt, a.slice(eq + 1));
      } else if (opt.takes === 'required') {
        const v = args[++i];
        if (v === undefined) return { ok: false, reason: `${program} option --${name} lacks its value` };
        take(opt, v);
      }
      continue;
    }
    if (spec.numericCount && /^-[0-9]+$/.test(a)) continue;
    for (let j = 1; j < a.length; j++) {
      const c = a[j] as string;
      const opt = Object.hasOwn(spec.short, c) ? spec.short[c] : undefined;
      if (opt === undefined) return notAllowed(a.length > 2 ? `-${c} (in ${a})` : `-${c}`);
      if (opt.takes === 'optional') return notAllowed(`-${c}`);
      if (opt.tag) tags.add(opt.tag);
      if (opt.takes === 'required') {
        let v: string | undefined = a.slice(j + 1);
        if (v === '') v = args[++i];
        if (v === undefined) return { ok: false, reason: `${program} option -${c} lacks its value` };
        take(opt, v);
        break;
      }
    }
  }
  let pathOperands = operands;
  if (spec.operands === 'grep' && !tags.has('pattern')) {
    if (operands.length === 0) return { ok: false, reason: 'grep has no pattern' };
    pathOperands = operands.slice(1);
  }
  if (spec.operands === 'text') return { ok: true, paths };
  if (spec.operands === 'none') {
    if (operands.length > 0) return { ok: false, reason: `${program} takes no operands (saw ${JSON.stringify(operands[0])})` };
    return { ok: true, paths };
  }
  if (spec.noPlusOperands) {
    const plus = pathOperands.find((o) => o.startsWith('+'));
    if (plus !== undefined) return { ok: false, reason: `${program} operand ${plus} may be the obsolete +N syntax` };
  }
  if (pathOperands.length === 0) {
    const reads = spec.operands === 'grep' ? (tags.has('recursive') ? 'dot' : 'stdin') : spec.noOperand;
    if (reads === 'stdin') return { ok: false, reason: `${program} with no file operand reads standard input` };
    if (reads === 'dot') return { ok: true, paths: [...paths, '.'] };
    return { ok: true, paths };
  }
  return { ok: true, paths: [...paths, ...pathOperands] };
}

/** `find [-P|-H]... [starting-point...] [expression]`, the expression by {@link FIND}. */
function judgeFind(args: readonly string[]): ArgsResult {
  let i = 0;
  while (i < args.length && (args[i] as string).startsWith('-') && args[i] !== '-' && !(args[i] as string).startsWith('--')) {
    const a = args[i] as string;
    if (FIND_GLOBAL.has(a)) {
      i++;
      continue;
    }
    // A word that is not a global option starts the expression.
    if (Object.hasOwn(FIND, a)) break;
    return { ok: false, reason: `find option ${a} is not on find's option allowlist` };
  }
  const starts: string[] = [];
  // findutils: the starting points end at the first word that begins with
  // "-" (and is longer than "-") or is one of ! ( ) ,
  while (i < args.length) {
    const a = args[i] as string;
    if ((a.startsWith('-') && a.length > 1) || ['!', '(', ')', ','].includes(a)) break;
    starts.push(a);
    i++;
  }
  const paths: string[] = [];
  for (; i < args.length; i++) {
    const a = args[i] as string;
    const kind = Object.hasOwn(FIND, a) ? FIND[a] : undefined;
    if (kind === undefined) {
      return a.startsWith('-')
        ? { ok: false, reason: `find option ${a} is not on find's option allowlist` }
        : { ok: false, reason: `find expression word ${JSON.stringify(a)} is not a known predicate` };
    }
    if (kind === 'none') continue;
    const v = args[++i];
    if (v === undefined) return { ok: false, reason: `find ${a} lacks its argument` };
    if (kind === 'path') paths.push(v);
  }
  return { ok: true, paths: [...(starts.length === 0 ? ['.'] : starts), ...paths] };
}

/** Names of the allowlisted programs. */
export const PROGRAM_NAMES: readonly string[] = Object.freeze(Object.keys(PROGRAMS));
