/**
 * How the person at the terminal runs this CLI, so every command a hint
 * prints works where they are: `npx agent-jobs …` when they came through
 * `npx` (or `npm exec`), which puts the package's bin on the PATH for this
 * process only; `agent-jobs …` when an `agent-jobs` is on their PATH (`npm link`,
 * docs/development.md, or a global install); else `node <bin/agent-jobs.js> …`,
 * as the README runs it (a fresh user copied `agent-jobs approve …` and got
 * "command not found").
 *
 * npm sets `npm_command` in the environment of what it runs: `exec` for
 * `npx` and `npm exec`, `run-script` for `npm run` (docs.npmjs.com, "scripts",
 * "npm_command" environment variable). Under `npm run` (the demo) the bin is on
 * the PATH of npm's process only, so the person types `npx` there too.
 */

import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** Whether an executable `agent-jobs` is in one of `env.PATH`'s folders. */
function onPath(env: NodeJS.ProcessEnv): boolean {
  return (env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => dir !== '')
    .some((dir) => {
      try {
        accessSync(path.join(dir, 'agent-jobs'), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}

/**
 * `npx agent-jobs` under `npx` / `npm exec` / `npm run`; `agent-jobs` when it is on `env.PATH`; else
 * `node <path of bin/agent-jobs.js>` (relative to `cwd` when under it).
 */
export function cliCommand(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  if (env.npm_command === 'exec' || env.npm_command === 'run-script') return 'npx agent-jobs';
  return onPath(env) ? 'agent-jobs' : `node ${binPath(cwd)}`;
}

/**
 * The CLI's commands (MAINTENANCE: keep in sync with src/cli/commands; test/unit/cli/invocation.test.ts
 * compares it with the program's). A hint that names one is rewritten by {@link asTyped}.
 */
export const CLI_COMMANDS = [
  'approve',
  'cancel',
  'checkpoints',
  'codec-server',
  'deny',
  'diff',
  'end',
  'extend',
  'file',
  'fork',
  'list',
  'model-server',
  'models',
  'pause',
  'pending',
  'resume',
  'rewind',
  'rules',
  'say',
  'server',
  'start',
  'status',
  'transcript',
  'watch',
  'worker',
] as const;

/** Path of the CLI's entry script (bin/agent-jobs.js), relative to `cwd` when it is under it. */
function binPath(cwd: string): string {
  const bin = path.resolve(__dirname, '..', '..', 'bin', 'agent-jobs.js');
  const here = path.resolve(cwd);
  return here !== path.parse(here).root && bin.startsWith(`${here}${path.sep}`) ? path.relative(here, bin) : bin;
}

/**
 * How to start a worker where the person is: `agent-jobs worker` when the CLI is on the PATH;
 * else (npx too) `node <bin/agent-jobs.js> worker`, as the README starts workers (npx would stand
 * between the worker and the signals that drain it).
 */
export function workerCommand(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  return cliCommand(env, cwd) === 'agent-jobs' ? 'agent-jobs worker' : `node ${binPath(cwd)} worker`;
}

/**
 * `text` with each command it names (`agent-jobs <command>`, quoted in backticks or not, or a
 * bare quoted `` `agent-jobs` ``) as {@link cliCommand} says to type it, and `agent-jobs worker`
 * as {@link workerCommand} does. Every hint and run message the CLI prints goes through it.
 * The product's name in prose (`the agent-jobs task queue`, `agent-jobs:`, `agent-jobs-worker`)
 * is left alone: only a name followed by one of {@link CLI_COMMANDS} is a command.
 */
export function asTyped(text: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  const cmd = cliCommand(env, cwd);
  if (cmd === 'agent-jobs') return text;
  const names = CLI_COMMANDS.join('|');
  return text
    .replace(new RegExp(`(?<![\\w./-]|npx )agent-jobs worker(?![\\w-])`, 'g'), workerCommand(env, cwd))
    .replace(new RegExp(`(?<![\\w./-]|npx )agent-jobs(?= (?:${names})(?![\\w-]))`, 'g'), cmd)
    .replace(/`agent-jobs`/g, `\`${cmd}\``);
}
