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
 * the probe and the command (traps are disabled, jobs are other processes), so the answer holds
 * for the command.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ansiCQuote } from './protocol';

/** Variables that make a system program run other code than its own (the loader's, bash's start-up files). */
const CODE_VARIABLES = /^(LD_[A-Z_]*|BASH_ENV|ENV)$/;

/** What the probe learned of one word: `type -at` kinds in order, `type -P` (hashed or PATH) path, whether a function, code variables exported. */
export interface ProbeAnswer {
  kinds: string[];
  path: string | undefined;
  function: boolean;
  codeVariables: string[];
}

/**
 * The probe's command text for `word` (sent like a command; it changes nothing in the shell)
 * and the nonce that frames its answer.
 */
export function probeCommand(word: string): { text: string; nonce: string } {
  const nonce = `AJP${randomBytes(12).toString('hex')}`;
  const w = ansiCQuote(word);
  const mark = (part: string): string => `\\builtin printf '%s\\n' ${nonce}:${part}`;
  const inner = [
    '(\\readonly -f builtin) 2>/dev/null && \\exit 3',
    mark('type'),
    `\\builtin type -at -- ${w}`,
    mark('path'),
    `\\builtin type -P -- ${w}`,
    mark('fn'),
    `(\\readonly -f -- ${w}) 2>/dev/null && \\builtin printf '%s\\n' function`,
    mark('env'),
    '\\export -p',
    mark('end'),
    '',
  ].join('\n');
  const text = `(POSIXLY_CORRECT=y && 2>/dev/null 9<"/proc/self/stat\${SHELLOPTS/*posix*/}" && \\eval -- ${ansiCQuote(inner)})`;
  return { text, nonce };
}

/** Reads the probe's output, or undefined when it is not whole and framed (anything before the first mark refuses it). */
export function parseProbe(output: string, nonce: string): ProbeAnswer | undefined {
  const parts = ['type', 'path', 'fn', 'env', 'end'].map((p) => `${nonce}:${p}\n`);
  if (!output.startsWith(parts[0]!) || !output.endsWith(parts[4]!)) return undefined;
  const at = parts.map((p) => output.indexOf(p));
  if (at.some((a, i) => a < 0 || (i > 0 && a < at[i - 1]!))) return undefined;
  const between = (i: number): string[] =>
    output
      .slice(at[i]! + parts[i]!.length, at[i + 1])
      .split('\n')
      .filter((l) => l !== '');
  const names = between(3)
    .map((l) => /^(?:export|declare -x) ([A-Za-z_][A-Za-z0-9_]*)/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined && CODE_VARIABLES.test(n));
  return { kinds: between(0), path: between(1)[0], function: between(2).includes('function'), codeVariables: [...new Set(names)] };
}

/**
 * Why the file `resolved` (as `type -P` printed it, relative to `cwd` when not absolute) is not a
 * program of the system, or undefined when it is: its real path must lie in a folder of the
 * session's starting PATH (`searchPath`, sessionSearchPath in env.ts), outside `workspace`, and
 * it and every folder above it must belong to root and be writable by neither group nor others
 * (so the session's user cannot replace it).
 */
export function notSystemProgram(resolved: string, cwd: string, searchPath: string, workspace: string): string | undefined {
  let real: string;
  try {
    real = fs.realpathSync(path.resolve(cwd, resolved));
  } catch {
    return `${resolved} cannot be resolved`;
  }
  const inside = (p: string, dir: string): boolean => p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
  if (inside(real, workspace)) return `${real}, a file of the workspace`;
  const dirs = searchPath.split(':').flatMap((d) => {
    try {
      return [fs.realpathSync(d)];
    } catch {
      return [];
    }
  });
  if (!dirs.includes(path.dirname(real))) return `${real}, not in a folder of the session's starting PATH (${searchPath})`;
  for (let p = real; ; p = path.dirname(p)) {
    const st = fs.statSync(p);
    if (st.uid !== 0 || (st.mode & 0o022) !== 0) return `${real}, which the session could replace (${p} is not root's alone)`;
    if (p === '/') return undefined;
  }
}
