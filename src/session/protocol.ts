/**
 * The control protocol between the worker and one bash process.
 *
 * bash reads its commands from a pipe (its stdin). For every user command
 * the worker writes ONE line (shown folded):
 *
 *     2>/dev/null 9<"/proc/self/stat<A>" || 2>&1 9<"/proc/<S>.noposix." && POSIXLY_CORRECT=y &&
 *     2>/dev/null 9<"/proc/self/stat<P>" || 2>&1 9<"/proc/<S>.noposix." &&
 *       \eval -- $'\\unset POSIXLY_CORRECT\n<2 bookkeeping lines>\n'<command> >|<fifo> 2>&1 </dev/null;
 *     2>&1 9<"/proc/<S>.$?." || ((1));\__aj_e <H>
 *
 * Threat model: the command is untrusted, and so is whatever state earlier
 * commands left in the shell (functions, aliases, variables with attributes,
 * options). bash resolves every command NAME through functions first, even
 * `builtin`, `command` and absolute paths (`function /usr/bin/printf` is
 * legal), so no named command can be trusted to run what we wrote. What
 * cannot be redefined: assignments, redirections, expansions, the `&&` and
 * `||` operators, our own read-only functions, and, in POSIX mode, the
 * special builtins (`eval`, `unset`), which POSIX mode looks up before
 * functions. (Reserved words such as `if` can be aliased; see below.)
 * The parts that decide what the worker believes use only those:
 *
 * - **What runs.** `<A>` is `${POSIXLY_CORRECT@a}`, the variable's
 *   attributes: the first redirection succeeds only when it has none (an
 *   assignment to a read-only variable would abort the whole line, and a
 *   nameref would send it elsewhere). `POSIXLY_CORRECT=y` then turns POSIX
 *   mode on;
 *   opening `/proc/self/stat<P>` checks it worked, where `<P>` is the
 *   expansion of `SHELLOPTS` with any value holding `posix` replaced by nothing
 *   (`SHELLOPTS` is kept by bash and read-only; the name exists only when
 *   it holds `posix`, and nobody can create files in /proc). When either
 *   check fails nothing runs and the record says `noposix`.
 *   `\eval` is then the special builtin whatever functions exist; the text
 *   it runs starts with `\unset POSIXLY_CORRECT` (special builtin too),
 *   which leaves POSIX mode before the first byte of the user's command.
 *   The command travels as DATA: a `$'...'` literal, or for long commands
 *   `"$(<file)"` (a command substitution of a bare redirection, which runs
 *   no command). Never through a variable, so no `declare -u/-l/-i`,
 *   nameref or `readonly` on a variable can change it.
 * - **Its exit status.** The status record is an error message that bash
 *   itself prints when a bare redirection fails: `9<"/proc/<S>.$?."` names a
 *   file that cannot exist (nothing can create files in /proc), so bash
 *   writes `bash: line N: /proc/<S>.<status>.: No such file or directory`
 *   on its stderr, which the `2>&1` before it points at bash's stdout, the
 *   worker's record pipe. No command runs, so nothing can intercept it;
 *   `|| ((1))` (an arithmetic command: `((` cannot be aliased, and it
 *   forks nothing) keeps `set -e` from treating the failure as fatal; xtrace prints nothing for a bare
 *   redirection. Every bare redirection of the line is on fd 9, never fd 0:
 *   bash runs one that redirects its own input (fd 0, where it reads the
 *   line) in a forked subshell, about 1 ms each on a busy machine, and one
 *   on another descriptor in itself (it saves and restores a fd 9 a command
 *   left open). `<S>` is a fresh 128-bit marker that
 *   only appears in this part of the line: it is in no variable, no
 *   argument and no `$BASH_COMMAND` the command or its functions can see.
 *   When bash exits during a command instead, its exit code is the
 *   command's only with its exit record ({@link exitTrapText}: its EXIT
 *   trap's record, during which the worker reads bash's own read count,
 *   which must cover the line) and nothing on bash's own stderr (a line a
 *   background job took bytes of parses as a syntax error there). A job
 *   that takes the whole line and shuts the socket down makes bash exit at
 *   end of file having run nothing; its read count says so, and the end is
 *   "could not be confirmed" (src/session/session.ts `settleExit`).
 * - **No aliases in the way.** Aliases apply to reserved words too (`alias
 *   if=...`), so the control line has no `if`, `{`, `!` or `[[`: only
 *   operators, quoted names (`\\eval`), assignments and bare redirections.
 * - **No traps.** `trap` and `enable` are disabled at start (`enable -n`),
 *   and `trap` is replaced by a read-only function that explains it: with
 *   no `enable`, nothing can bring the builtin back. So no DEBUG trap (with
 *   `extdebug`, able to skip or forge any command of ours), RETURN or ERR
 *   trap exists in the session shell. Scripts and `bash -c` keep theirs.
 * - **The working directory** is not taken from bash at all: the worker
 *   reads `/proc/<bash pid>/cwd` (the kernel's), so `PWD=/fake` forges
 *   nothing.
 *
 * Bookkeeping that may be subverted without lying about the command: `\__aj_r`
 * restores `$?` for the command; `\__aj_e`
 * (read-only) resets `errexit`/`nounset`/`xtrace`/`verbose`/`onecmd` (with
 * `set -t` bash would exit after this line, and the next command would meet
 * a dead shell), re-applies the
 * resource limits and prints the housekeeping record `<H>\0<flags>\0`, with
 * a third marker. A working directory the command deleted is seen by the
 * worker in /proc (`/proc/<pid>/cwd` ends with ` (deleted)`); the next
 * command's eval text starts by moving to its nearest existing parent. A function named `builtin` can intercept these, and learns
 * only `<H>` (the fence that tells the worker it has all the output is
 * written by the worker itself after the records, capture.ts, and is in no line). The worker requires, for a command to count as
 * ended: exactly one status record, then the housekeeping record, bash's
 * stdin and stdout still the pipes it started with, and two facts from the
 * kernel: bash itself read at least the control line's bytes since it was
 * sent (`rchar` in /proc/<pid>/io: a background job holding bash's saved
 * stdin, fd 10 to 12 in a forked subshell, cannot read the line in its
 * place unnoticed), and bash then sits blocked reading its stdin in its own
 * command reader, not still running the command or a function: the stack
 * pointer, code address and count of that read(0) in /proc/<pid>/syscall,
 * a buffer off the stack, and /proc/<pid>/auxv equal what they were at
 * start, before any user code ran (shell.ts `waitIdle`); the status records are
 * counted again once it is, so a forged pair written before bash's own (by a
 * process that learned the tokens and cut the command short) is a second one.
 * No process of the session can peek at the line without taking it: the
 * seccomp filter refuses MSG_PEEK (seccomp.ts). This is what makes
 * a `builtin` function harmless: one that the bookkeeping calls and that
 * never returns, reading the later control lines itself with the `read`
 * builtin (on fd 0 or a saved copy) and writing forged records, waits in
 * another place of the stack, so the command that set it up counts as not
 * ended and the shell is restarted. A status record forged
 * by a command that found `<S>` anyway (by reading bash's memory), or
 * written while the command still runs (to escape its timeout), shows up as
 * a second status record, or as a housekeeping record that does not follow;
 * the worker then kills the shell and reports that the exit status is
 * unknown.
 *
 * - stdin is /dev/null: a command that reads input sees end-of-file at once
 *   and can never eat the control channel.
 * - stdout and stderr go to a named pipe of this command (in a private 0700
 *   directory; see capture.ts). A background job keeps writing into ITS
 *   command's pipe, which the worker drains and drops, so it neither holds
 *   the control pipe open nor leaks into a later result. The pipe is
 *   unlinked when its command ends and its name never serves another
 *   command, so a job that learned it cannot open a later command's pipe;
 *   as root, no process of the session can open any pipe for reading
 * *   (capture.ts), and bash opens it only for writing.
 * - `eval` runs at top level (not in a function), so `declare`, `local`,
 *   `return` and positional parameters behave as in a script, and variables,
 *   functions, aliases and the working directory persist. One thing does not
 *   persist: `set -o posix` lasts until the end of its command, since the
 *   next command starts by leaving POSIX mode.
 */
import { randomBytes } from 'node:crypto';

/**
 * Commands whose quoted form is longer than this (bytes) are passed through
 * a file instead of inline: bash reads a pipe one byte per read(2) call, so a
 * 100 KB heredoc inline costs 100k system calls, while the `read` builtin
 * reads a regular file in 4 KiB blocks.
 */
export const INLINE_COMMAND_MAX_BYTES = 2048;

/**
 * Quotes a string as a bash ANSI-C string `$'...'`: backslash and single
 * quote escaped, control characters as `\xHH`, everything else (including
 * UTF-8) literal. The result is one line. The string must not contain NUL.
 */
export function ansiCQuote(text: string): string {
  let out = "$'";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    const code = text.charCodeAt(i);
    if (ch === '\\') out += '\\\\';
    else if (ch === "'") out += "\\'";
    else if (ch === '\n') out += '\\n';
    else if (code < 0x20 || code === 0x7f) out += '\\x' + code.toString(16).padStart(2, '0');
    else out += ch;
  }
  return out + "'";
}

/** A fresh end marker, split in the two halves that are sent to bash (used for the start-up record only). */
export interface Marker {
  /** Full marker, as it appears in bash's output (never in its input). */
  full: string;
  first: string;
  second: string;
}

/** Creates a random 128-bit marker. */
export function newMarker(): Marker {
  const hex = randomBytes(16).toString('hex');
  return { full: `AJ${hex}`, first: `AJ${hex.slice(0, 16)}`, second: hex.slice(16) };
}

function markerAssignments(marker: Marker): string {
  return `__aj_m1=${marker.first};__aj_m2=${marker.second};`;
}

/** The three fresh 128-bit tokens of one command (see the module comment). */
export interface CommandTokens {
  /** Marks the status record: `/proc/<status>.<exit status>.`. Appears only in the line's status part. */
  status: string;
  /** Written by the worker into the command's FIFO after its output (capture.ts `writeFence`); never sent to bash. */
  fence: string;
  /** Marks the housekeeping record. */
  housekeeping: string;
}

/** Creates the tokens of one command: `AJ` + 32 hex digits each, all different. */
export function newCommandTokens(): CommandTokens {
  const t = (): string => `AJ${randomBytes(16).toString('hex')}`;
  return { status: t(), fence: t(), housekeeping: t() };
}

/**
 * Message printed by the read-only `trap` function that replaces the
 * disabled builtin in every session shell.
 */
export const TRAP_DISABLED_MESSAGE =
  "bash: trap: disabled in this session shell (a DEBUG or RETURN trap could skip or forge the session's own commands); traps work inside scripts and bash -c";

/**
 * Variables glibc's dynamic loader removes from the environment of a program run in secure-execution
 * mode (glibc `unsecvars.h`, the ones a shell's user would set; `LD_*` excluded), as the sealed bash
 * is (sandbox.ts `sealShell`): without them again, a session's `TMPDIR` would be lost.
 */
export const LOADER_DROPPED_ENV: readonly string[] = [
  'TMPDIR',
  'TZDIR',
  'LOCPATH',
  'NLSPATH',
  'GCONV_PATH',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'RES_OPTIONS',
  'RESOLV_HOST_CONF',
  'MALLOC_TRACE',
  'GETCONF_DIR',
  'NIS_PATH',
];

/**
 * The script sent once when bash starts: aliases on (non-interactive bash
 * ignores them otherwise, and an agent's `alias ll=...` should work in the
 * next command), `trap` and `enable` disabled (see the module comment), the
 * protocol functions (read-only), the resource limits, and the ready record
 * (status = result of applying the limits). No user code has run yet, so
 * this script may use variables and builtins freely.
 *
 * `ulimitArgs` are for bash's default mode, where -v and -f count KiB;
 * `__aj_lim` leaves POSIX mode while it applies them, because POSIX mode
 * counts -c and -f in 512-byte blocks.
 *
 * `restore`: variables set again in bash's environment first: those of
 * {@link LOADER_DROPPED_ENV} the session gives, which the dynamic loader
 * removed because the sealed bash starts with another effective group
 * (a secure-execution program, ld.so(8)).
 */
export function initScript(
  ulimitArgs: string,
  marker: Marker,
  restore: Record<string, string> = {},
  exit?: { fifo: string; ack: string; token: string },
): string {
  return [
    ...Object.entries(restore)
      .filter(([name]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      .map(([name, value]) => `\\builtin export ${name}=${ansiCQuote(value)}`),
    ...(exit ? [`\\builtin trap -- ${ansiCQuote(exitTrapText(exit.fifo, exit.ack, exit.token))} EXIT`] : []),
    '\\builtin shopt -s expand_aliases',
    '\\builtin enable -n trap',
    `trap() { \\builtin printf '%s\\n' ${ansiCQuote(TRAP_DISABLED_MESSAGE)} >&2; return 2; }`,
    '\\builtin enable -n enable',
    // No variable in these two: a variable the session gave attributes (a nameref to `a[$(…)]`, `declare -i`)
    // would run its code at every assignment, after every command.
    '__aj_lim() {',
    '  if [[ -o posix ]]; then \\builtin set +o posix; if \\builtin ulimit -S -H ' +
      ulimitArgs +
      '; then \\builtin set -o posix; return 0; fi; \\builtin set -o posix; return 1; fi',
    '  \\builtin ulimit -S -H ' + ulimitArgs,
    '}',
    '__aj_r() { return "$1"; }',
    '__aj_e() {',
    '  \\builtin set +o errexit +o nounset +o xtrace +o verbose +o onecmd',
    '  if __aj_lim 2>/dev/null; then \\builtin printf \'%s\\0\\0\' "$1"; else \\builtin printf \'%s\\0l\\0\' "$1"; fi',
    '}',
    '\\builtin readonly -f __aj_lim __aj_r __aj_e trap',
    '__aj_lim; __aj_s=$?',
    markerAssignments(marker) + '\\builtin printf \'%s%s\\0%s\\0%s\\0%s\\0%s\\0\' "$__aj_m1" "$__aj_m2" "$__aj_s" \'\' \'\' "$PWD"',
    'unset __aj_m1 __aj_m2 __aj_s',
    '',
  ].join('\n');
}

/**
 * The EXIT trap set before `trap` is disabled: when bash exits (the `exit` builtin, `set -e`, end of
 * file on its stdin, a signal it can catch) it writes the exit record `/proc/<X>.<status>.` into `fifo`,
 * as the error message of a bare redirection (no command runs, so nothing the session defined can
 * intercept it), and then waits in the open of `ack` for reading (a FIFO: the open returns once the
 * worker opens it for writing). Meanwhile the worker reads bash's own read count (`rchar`, as for a
 * record) while bash is still alive: the proof that bash itself read the control line before it
 * exited. `<X>` is the shell's exit token, only in this text (bash's memory, not readable by the
 * session's processes when the shell is sealed). `||` keeps `set -e` from ending the trap early.
 */
export function exitTrapText(fifo: string, ack: string, token: string): string {
  const q = (p: string): string => `'${p.replace(/'/g, "'\\''")}'`;
  return `2>>${q(fifo)} 9<"/proc/${token}.$?." || 2>/dev/null 9<${q(ack)}`;
}

/**
 * The status of the first exit record of `token` in `text` (what the exit FIFO held, see
 * {@link exitTrapText}), or undefined when none is whole yet.
 */
export function parseExitRecord(text: string, token: string): number | undefined {
  const at = text.indexOf(`/proc/${token}.`);
  if (at < 0) return undefined;
  const m = /^(\d{1,3})\./.exec(text.slice(at + token.length + 7));
  return m ? Number(m[1]) : undefined;
}

/** How the command text reaches bash. */
export type CommandSource = { inline: string } | { file: string };

/**
 * Chooses inline or file transport for a command (see
 * {@link INLINE_COMMAND_MAX_BYTES}). For file transport the caller writes
 * {@link commandFileContent} of the command to `commandFile`.
 */
export function commandSource(command: string, commandFile: string): CommandSource {
  const quoted = ansiCQuote(command);
  return Buffer.byteLength(quoted) <= INLINE_COMMAND_MAX_BYTES ? { inline: quoted } : { file: commandFile };
}

/**
 * What a command file holds: the command and a final comment line, because
 * `"$(<file)"` drops trailing newlines and a command's last newline can
 * matter (a here-document's delimiter line).
 */
export function commandFileContent(command: string): string {
  return `${command}\n#`;
}

/**
 * What `eval` runs before the user's command: leave POSIX mode (a special
 * builtin, found before any function while POSIX mode is still on); turn
 * aliases back on, which leaving POSIX mode turns off (an agent's `alias
 * ll=...` works in its next command); move out of a working directory the
 * previous command deleted (`cd`, or the no-op `((1))` so the line count
 * stays 4); restore `$?` to the previous command's status (`((1))` for 0, else `$(POSIXLY_CORRECT=y; \\exit N)`, whose `exit` no
 * function can shadow). The middle two lines are plain bookkeeping. Aliases are
 * thus on while the next control line is parsed, which is why that line
 * holds no reserved word or unquoted name where an alias could apply.
 */
function evalPrefix(previousStatus: number, cd: string | undefined): string {
  const move = cd !== undefined ? `\\builtin cd -- '${cd.replace(/'/g, "'\\''")}'` : '((1))';
  // $? without a function call: a bare command substitution's status, its `exit` found in POSIX mode.
  const status = previousStatus === 0 ? '((1))' : `$(POSIXLY_CORRECT=y; \\exit ${previousStatus})`;
  return ansiCQuote(`\\unset POSIXLY_CORRECT\n\\builtin shopt -s expand_aliases\n${move}\n${status}\n`);
}

/** Lines {@link evalPrefix} adds before the user's command inside `eval`: bash numbers the command's lines from there. */
export const EVAL_PREFIX_LINES = 4;

/**
 * The control line for one command (ends with a newline); see the module
 * comment for what each part does and why it is built only from parts that
 * no function, alias or variable attribute can redefine.
 * @param previousStatus the previous command's exit status (0..255), restored as `$?`
 * @param cd a directory to move into before the command (the previous one deleted the working directory)
 */
export function controlLine(source: CommandSource, captureFifo: string, tokens: CommandTokens, previousStatus = 0, cd?: string): string {
  const prev = Number.isInteger(previousStatus) && previousStatus >= 0 && previousStatus <= 255 ? previousStatus : 0;
  const prefix = evalPrefix(prev, cd);
  const text = 'inline' in source ? `${prefix}${source.inline}` : `${prefix}"$(<${ansiCQuote(source.file)})"`;
  const fifo = ansiCQuote(captureFifo);
  return (
    // POSIXLY_CORRECT must have no attributes (read-only would abort the whole line), then POSIX mode
    // on; else a record that says it could not be turned on, and nothing runs.
    `2>/dev/null 9<"/proc/self/stat\${POSIXLY_CORRECT@a}" || 2>&1 9<"/proc/${tokens.status}.noposix." && POSIXLY_CORRECT=y && ` +
    `2>/dev/null 9<"/proc/self/stat\${SHELLOPTS/*posix*/}" || 2>&1 9<"/proc/${tokens.status}.noposix." && ` +
    `\\eval -- ${text} >|${fifo} 2>&1 </dev/null;` +
    `2>&1 9<"/proc/${tokens.status}.$?." || ((1));\\__aj_e ${tokens.housekeeping}\n`
  );
}

/** The start-up record (ready) bash prints after {@link initScript}. */
export interface EndRecord {
  /** Status of applying the resource limits (0 = applied). */
  status: number;
  /** Unused at start-up (always empty). */
  flags: string;
  /** Unused at start-up (always empty). */
  movedFrom: string;
  /** Working directory bash started in ($PWD). */
  cwd: string;
}

/** The housekeeping record `\__aj_e` prints after every command: `<H>\0<flags>\0`. */
export interface HousekeepingRecord {
  /** `l`: the resource limits could not be re-applied (the command lowered a hard limit). */
  flags: string;
}

/**
 * What bash's stdout said about one command: every status record carrying
 * its status token, in order (`"0"`..`"255"`, or `"noposix"` when the
 * command could not be run safely), and the housekeeping record once it
 * came. More than one status record means one was forged.
 */
export interface CommandRecords {
  statuses: string[];
  housekeeping?: HousekeepingRecord;
  /** Set when more than {@link MAX_RECORD_BUFFER} bytes of one unfinished record came: bytes were dropped unread, so a record may be missing. */
  overflow?: boolean;
}

/** Bytes of bash's stdout kept while a command runs (only protocol text and forgeries go there). */
const MAX_RECORD_BUFFER = 1 << 20;

/**
 * Finds records in bash's stdout. Only bash's own control output goes there
 * (user output goes to capture FIFOs); anything else (a forgery, stray text)
 * is skipped unless it carries the current command's tokens.
 */
export class RecordScanner {
  private buf: Buffer = Buffer.alloc(0);
  private pending: { marker: Buffer; resolve: (r: EndRecord) => void } | undefined;
  private watch:
    { tokens: CommandTokens; records: CommandRecords; onStatus: () => void; onHousekeeping: () => void; statusAt: number } | undefined;

  /** Feeds bytes bash wrote on stdout. */
  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    this.match();
    // A watched command's bytes are all scanned by now (matchCommand keeps only what may start a record); outside
    // one, only the start-up record is awaited. Dropping more here could lose a record, so it is said.
    if (this.buf.length > MAX_RECORD_BUFFER) {
      if (this.watch) {
        this.watch.records.overflow = true;
        this.watch.statusAt = 0;
      }
      this.buf = this.buf.subarray(this.buf.length - MAX_RECORD_BUFFER);
    }
  }

  /** Waits for the start-up record of `marker` (one at a time; a new call replaces the old). */
  expect(marker: Marker): Promise<EndRecord> {
    return new Promise((resolve) => {
      this.pending = { marker: Buffer.from(marker.full), resolve };
      this.match();
    });
  }

  /**
   * Starts watching for one command's records; what came before is
   * dropped. `onStatus` is called at the first status record,
   * `onHousekeeping` when the housekeeping record has come; read the
   * records with {@link records}.
   */
  watchCommand(tokens: CommandTokens, onStatus: () => void, onHousekeeping: () => void): void {
    this.buf = Buffer.alloc(0);
    this.watch = { tokens, records: { statuses: [] }, onStatus, onHousekeeping, statusAt: 0 };
  }

  /** The records seen for the watched command so far. */
  records(): CommandRecords {
    return this.watch?.records ?? { statuses: [] };
  }

  /** Stops waiting (pending promises never settle; callbacks are not called again). */
  cancel(): void {
    this.pending = undefined;
    this.watch = undefined;
  }

  private match(): void {
    if (this.pending) this.matchStartup(this.pending);
    else if (this.watch) this.matchCommand(this.watch);
    else this.trim(64);
  }

  private matchStartup(p: { marker: Buffer; resolve: (r: EndRecord) => void }): void {
    const at = this.buf.indexOf(p.marker);
    if (at < 0) {
      this.trim(p.marker.length);
      return;
    }
    const fields: string[] = [];
    let pos = at;
    for (let i = 0; i < 5; i++) {
      const nul = this.buf.indexOf(0, pos);
      if (nul < 0) {
        this.buf = this.buf.subarray(at);
        return;
      }
      fields.push(this.buf.toString('utf8', pos, nul));
      pos = nul + 1;
    }
    this.buf = this.buf.subarray(pos);
    this.pending = undefined;
    p.resolve({ status: Number(fields[1]), flags: fields[2] ?? '', movedFrom: fields[3] ?? '', cwd: fields[4] ?? '' });
  }

  /**
   * Counts every status record from `statusAt` on and the housekeeping record, then drops the bytes
   * already scanned that cannot be part of a record to come (keeping an unfinished record, or the last
   * bytes that may be the start of a token), moving `statusAt` with them: every status record in the
   * stream is counted once, however the bytes are cut into chunks and however many came before it.
   */
  private matchCommand(w: NonNullable<RecordScanner['watch']>): void {
    const status = Buffer.from(`${w.tokens.status}.`);
    const hk = Buffer.from(w.tokens.housekeeping);
    let keepFrom = Math.max(0, this.buf.length - Math.max(status.length, hk.length) + 1);
    for (;;) {
      const s = this.buf.indexOf(status, w.statusAt);
      const h = w.records.housekeeping ? -1 : this.buf.indexOf(hk);
      if (s >= 0 && (h < 0 || s < h)) {
        const end = this.buf.indexOf(0x2e /* . */, s + status.length);
        if (end < 0) {
          keepFrom = Math.min(keepFrom, s); // the rest of the record is still on its way
          break;
        }
        w.records.statuses.push(this.buf.toString('latin1', s + status.length, end));
        w.statusAt = end + 1;
        if (w.records.statuses.length === 1) w.onStatus();
        continue;
      }
      if (h >= 0) {
        const fields: string[] = [];
        let pos = h + hk.length;
        let complete = true;
        for (let i = 0; i < 2 && complete; i++) {
          const nul = this.buf.indexOf(0, pos);
          if (nul < 0) complete = false;
          else {
            fields.push(this.buf.toString('utf8', pos, nul));
            pos = nul + 1;
          }
        }
        if (!complete) {
          keepFrom = Math.min(keepFrom, h);
          break;
        }
        w.records.housekeeping = { flags: fields[1] ?? '' };
        w.statusAt = Math.max(w.statusAt, pos);
        w.onHousekeeping();
        continue;
      }
      break;
    }
    if (keepFrom > 0 && this.watch === w) {
      this.buf = this.buf.subarray(keepFrom);
      w.statusAt = Math.max(0, w.statusAt - keepFrom);
    }
  }

  /** Keeps only the last bytes that could be the start of a marker. */
  private trim(keep: number): void {
    if (this.buf.length > keep) this.buf = this.buf.subarray(this.buf.length - keep);
  }
}
