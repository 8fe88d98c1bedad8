/**
 * The control protocol between the worker and one bash process.
 *
 * bash reads its commands from a pipe (its stdin). For every user command
 * the worker writes ONE line:
 *
 *     __aj_m1=<hex>;__aj_m2=<hex>;__aj_c=$'<command, ANSI-C quoted>';\__aj_r;
 *     \builtin eval -- "$__aj_c" >|<fifo> 2>&1 </dev/null; __aj_s=$?;
 *     <fence> >|<fifo>; \__aj_e "$__aj_s"
 *
 * - The command travels as DATA (a `$'...'` string, or for long commands a
 *   file read with the `read` builtin), never as code on the control line.
 *   `eval` parses it at run time, so an unbalanced quote, an unclosed `$(`,
 *   or a bad `for` loop is a syntax error inside eval (status 2), and an
 *   unclosed heredoc takes the rest of the command as its body (bash warns;
 *   the status is the command's): neither can swallow the rest of the
 *   control line.
 * - `eval` runs at top level (not in a function), so `declare`, `local`,
 *   `return` and positional parameters behave as in a script, and variables,
 *   functions, aliases and the working directory persist.
 * - stdin is /dev/null: a command that reads input sees end-of-file at once
 *   and can never eat the control channel.
 * - stdout and stderr go to a named pipe of this command (in a private 0700
 *   directory; see capture.ts). A background job keeps writing into ITS
 *   command's pipe, which the worker drains and drops, so it neither holds
 *   the control pipe open nor leaks into a later result; nothing the command
 *   prints reaches bash's own stdout, where the end record is written. The
 *   fence (the marker, written into the command's pipe after it) tells the
 *   worker it has read all of the command's output. (A command that prints
 *   `$__aj_m1$__aj_m2` on purpose only cuts its own output short: the end
 *   of a command is the record on bash's stdout, which it cannot reach.)
 * - `__aj_e` (defined once at start, read-only) resets the options that would
 *   otherwise make the shell die on the next mistake (`errexit`, `nounset`)
 *   or pollute output (`xtrace`, `verbose`), re-applies the resource limits,
 *   moves out of a working directory that was deleted, and prints the end
 *   record on bash's own stdout:
 *       <marker>\0<exit status>\0<flags>\0<old cwd if moved>\0<cwd>\0
 *   The marker is fresh random hex per command, sent to bash as two halves
 *   in two variables and joined only by printf, so the marker string itself
 *   is never in the text bash reads (`set -v` or `set -x` echoing the
 *   control line cannot forge an end).
 * - `__aj_r` returns the previous command's status so `$?` carries over.
 * - Builtins are called as `\builtin name`, so aliases and functions named
 *   `cd`, `printf`, `set`, `eval`, `read` do not interfere. (A function named
 *   `builtin` itself would: the command then times out and the shell is
 *   restarted, like any command that breaks the shell.)
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

/** A fresh end marker, split in the two halves that are sent to bash. */
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

/**
 * The script sent once when bash starts: aliases on (non-interactive bash
 * ignores them otherwise, and an agent's `alias ll=...` should work in the
 * next command), the protocol functions, the resource limits, and the ready
 * record (status = result of applying the limits).
 *
 * `ulimitArgs` are for bash's default mode, where -v and -f count KiB;
 * `__aj_lim` leaves POSIX mode while it applies them, because POSIX mode
 * counts -c and -f in 512-byte blocks.
 */
export function initScript(ulimitArgs: string, marker: Marker): string {
  return [
    '\\builtin shopt -s expand_aliases',
    '__aj_last=0',
    '__aj_lim() {',
    '  if [[ -o posix ]]; then \\builtin set +o posix; \\builtin ulimit -S -H ' + ulimitArgs + '; __aj_x=$?; \\builtin set -o posix; return "$__aj_x"; fi',
    '  \\builtin ulimit -S -H ' + ulimitArgs,
    '}',
    '__aj_r() { return "${__aj_last:-0}"; }',
    '__aj_e() {',
    '  \\builtin set +o errexit +o nounset +o xtrace +o verbose',
    '  __aj_last=$1; __aj_c=; __aj_f=; __aj_mv=',
    '  __aj_lim 2>/dev/null || __aj_f=l',
    '  if ! [[ -n ${PWD-} && . -ef ${PWD-} ]]; then',
    '    if [[ -z ${PWD-} ]]; then \\builtin cd . 2>/dev/null',
    '    else',
    '      __aj_mv=$PWD; __aj_d=$PWD',
    '      while [[ $__aj_d == /* && ! -d $__aj_d ]]; do __aj_d=${__aj_d%/*}; done',
    '      \\builtin cd -- "${__aj_d:-/}" 2>/dev/null || \\builtin cd / 2>/dev/null',
    '    fi',
    '  fi',
    "  \\builtin printf '%s%s\\0%s\\0%s\\0%s\\0%s\\0' \"$__aj_m1\" \"$__aj_m2\" \"$1\" \"$__aj_f\" \"$__aj_mv\" \"$PWD\"",
    '}',
    '\\builtin readonly -f __aj_lim __aj_r __aj_e',
    '__aj_lim; __aj_s=$?',
    markerAssignments(marker) +
      "\\builtin printf '%s%s\\0%s\\0%s\\0%s\\0%s\\0' \"$__aj_m1\" \"$__aj_m2\" \"$__aj_s\" '' '' \"$PWD\"",
    '',
  ].join('\n');
}

/** How the command text reaches bash. */
export type CommandSource = { inline: string } | { file: string };

/** Chooses inline or file transport for a command (see {@link INLINE_COMMAND_MAX_BYTES}). */
export function commandSource(command: string, commandFile: string): CommandSource {
  const quoted = ansiCQuote(command);
  return Buffer.byteLength(quoted) <= INLINE_COMMAND_MAX_BYTES ? { inline: quoted } : { file: commandFile };
}

/**
 * The control line for one command (ends with a newline). The command's
 * stdout and stderr go to `captureFifo`; right after it bash writes the
 * marker into the same FIFO as a fence (with xtrace off, so `set -x` does not
 * trace our code into the output). The fence is a separate redirection, not
 * part of a group around eval, so an ERR trap fires once for a failing
 * command, as in a script, and not again for the group. It opens the FIFO
 * read-write (`1<>`), which never blocks: if the worker died meanwhile, bash
 * must not hang forever waiting for a reader.
 */
export function controlLine(source: CommandSource, captureFifo: string, marker: Marker): string {
  const load = 'inline' in source ? `__aj_c=${source.inline};` : `IFS= \\builtin read -r -d '' __aj_c <${ansiCQuote(source.file)};`;
  const fifo = ansiCQuote(captureFifo);
  return (
    `${markerAssignments(marker)}${load}\\__aj_r;` +
    `\\builtin eval -- "$__aj_c" >|${fifo} 2>&1 </dev/null;` +
    `{ __aj_s=$?; \\builtin set +o xtrace +o verbose; } 2>/dev/null;` +
    `\\builtin printf '%s%s' "$__aj_m1" "$__aj_m2" 1<>${fifo} 2>/dev/null;\\__aj_e "$__aj_s"\n`
  );
}

/** The end record bash prints after a command. */
export interface EndRecord {
  /** Exit status of the command (0..255). */
  status: number;
  /** `l`: the resource limits could not be re-applied (the command lowered a hard limit). */
  flags: string;
  /** Set when the working directory had been deleted or replaced: the path the shell was in. */
  movedFrom: string;
  /** Working directory after the command ($PWD). */
  cwd: string;
}

/**
 * Finds end records in bash's stdout. Only bash's own control output goes
 * there (user output goes to capture files), but stray text (a DEBUG trap's
 * output, an EXIT trap) is possible and is skipped.
 */
export class RecordScanner {
  private buf: Buffer = Buffer.alloc(0);
  private pending: { marker: Buffer; resolve: (r: EndRecord) => void } | undefined;

  /** Feeds bytes bash wrote on stdout. */
  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    this.match();
  }

  /** Waits for the record of `marker` (one at a time; a new call replaces the old). */
  expect(marker: Marker): Promise<EndRecord> {
    return new Promise((resolve) => {
      this.pending = { marker: Buffer.from(marker.full), resolve };
      this.match();
    });
  }

  /** Stops waiting (the old promise never settles). */
  cancel(): void {
    this.pending = undefined;
  }

  private match(): void {
    const p = this.pending;
    if (!p) {
      this.trim(64);
      return;
    }
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

  /** Keeps only the last bytes that could be the start of a marker. */
  private trim(keep: number): void {
    if (this.buf.length > keep) this.buf = this.buf.subarray(this.buf.length - keep);
  }
}
