/**
 * How the person at the terminal runs this CLI, so every command a hint
 * prints works where they are: `npx agent-jobs …` when they came through
 * `npx` (or `npm exec`), which puts the package's bin on the PATH for this
 * process only; `agent-jobs …` otherwise (on the PATH through `npm link`,
 * docs/development.md, or a global install).
 *
 * npm sets `npm_command` in the environment of what it runs: `exec` for
 * `npx` and `npm exec`, `run-script` for `npm run` (docs.npmjs.com, "scripts",
 * "npm_command" environment variable). Under `npm run` (the demo) the bin is on
 * the PATH of npm's process only, so the person types `npx` there too.
 */

/** `npx agent-jobs` under `npx` / `npm exec` / `npm run`, else `agent-jobs`. */
export function cliCommand(env: NodeJS.ProcessEnv = process.env): string {
  return env.npm_command === 'exec' || env.npm_command === 'run-script' ? 'npx agent-jobs' : 'agent-jobs';
}

/**
 * `text` with each command it quotes (`` `agent-jobs …` ``, the form every
 * hint and run message uses) as {@link cliCommand} says to type it. Words
 * outside backticks are left alone (a run's own text may name the product).
 */
export function asTyped(text: string, env: NodeJS.ProcessEnv = process.env): string {
  const cmd = cliCommand(env);
  return cmd === 'agent-jobs' ? text : text.replace(/`agent-jobs(?= |`)/g, `\`${cmd}`);
}
