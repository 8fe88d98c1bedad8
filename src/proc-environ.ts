/**
 * Keeps the worker's secrets out of `/proc/<worker pid>/environ`.
 *
 * Linux shows a process's environment as it was at exec, from the block of
 * memory the kernel wrote it to (between `env_start` and `env_end`, fields
 * 50 and 51 of `/proc/<pid>/stat`, see proc(5)). `unsetenv` or
 * `delete process.env.X` leaves that block alone, so a command in a bash
 * session, which runs as the worker's user, could read the worker's API key
 * with `cat /proc/$PPID/environ` and print it in any encoding that
 * redaction cannot recognise. This module overwrites the secret values in
 * that block.
 *
 * It is one layer, not isolation: a process of the same user can still read
 * the worker's memory (ptrace, `/proc/<pid>/mem`), and the processes that
 * started the worker (a shell, `npx`) keep their own copies. See docs/security.md,
 * "Who runs bash".
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { statFields } from './session/procs';

/** What {@link hideFromProcEnviron} did. */
export interface HiddenEnviron {
  /** Names whose values were overwritten in the exec-time block, in block order. */
  hidden: string[];
  /** Why nothing was done (not Linux, `/proc` unreadable, the block moved), or null. */
  skipped: string | null;
}

/**
 * Overwrites the values of the named variables in this process's exec-time
 * environment block with `*` (same length), so `/proc/<pid>/environ` no
 * longer shows them. `process.env` keeps the real values: each is first set
 * again, which makes libc keep a copy on the heap and stop pointing into the
 * block.
 *
 * @param isSecret decides, per variable name found in the block
 * @returns the names hidden; `skipped` says why when it could do nothing
 *   (never throws: a worker without `/proc` still runs)
 */
export function hideFromProcEnviron(isSecret: (name: string) => boolean): HiddenEnviron {
  if (process.platform !== 'linux') return { hidden: [], skipped: `not Linux (${process.platform})` };
  let block: Buffer;
  let start: number;
  let end: number;
  try {
    const fields = statFields(readFileSync('/proc/self/stat', 'latin1'));
    start = Number(fields[50 - 3]);
    end = Number(fields[51 - 3]);
    block = readFileSync('/proc/self/environ');
  } catch (err) {
    return { hidden: [], skipped: `cannot read /proc/self: ${(err as Error).message}` };
  }
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end <= start) {
    return { hidden: [], skipped: 'no env_start/env_end in /proc/self/stat' };
  }
  const targets: Array<{ name: string; offset: number; length: number }> = [];
  let offset = 0;
  while (offset < block.length) {
    let nul = block.indexOf(0, offset);
    if (nul === -1) nul = block.length;
    const entry = block.subarray(offset, nul).toString('latin1');
    const eq = entry.indexOf('=');
    if (eq > 0) {
      const name = entry.slice(0, eq);
      const valueBytes = nul - offset - eq - 1;
      if (valueBytes > 0 && isSecret(name) && process.env[name] !== undefined)
        targets.push({ name, offset: offset + eq + 1, length: valueBytes });
    }
    offset = nul + 1;
  }
  if (targets.length === 0) return { hidden: [], skipped: null };
  // Move every value libc points at out of the block before overwriting it.
  for (const t of targets) {
    const value = process.env[t.name]!;
    process.env[t.name] = value;
  }
  let fd: number;
  try {
    fd = openSync('/proc/self/mem', 'r+');
  } catch (err) {
    return { hidden: [], skipped: `cannot open /proc/self/mem: ${(err as Error).message}` };
  }
  const hidden: string[] = [];
  try {
    for (const t of targets) {
      writeSync(fd, Buffer.alloc(t.length, '*'), 0, t.length, start + t.offset);
      hidden.push(t.name);
    }
  } catch (err) {
    return { hidden, skipped: `cannot write /proc/self/mem: ${(err as Error).message}` };
  } finally {
    closeSync(fd);
  }
  return { hidden, skipped: null };
}
