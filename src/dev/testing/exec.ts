/**
 * The one module that imports execa: the development tools (the dev server
 * launcher, the cluster recipe, the scripts, the benches) run programs to
 * their end through it. The product's own child processes (bash, bwrap,
 * slirp4netns, prlimit) are spawned by src/session with `node:child_process`,
 * where every descriptor and signal is the session's to choose. An
 * `@typescript-eslint/no-restricted-imports` rule (eslint.config.mjs) keeps
 * every other module off execa.
 *
 * execa 9 (https://github.com/sindresorhus/execa, docs/api.md): `execa(file,
 * args, options)` resolves to a result with `exitCode`, `stdout`, `stderr`
 * and `all`; with `reject: false` a non-zero exit resolves too.
 */
import type * as Execa from 'execa';

export type { Options as ExecOptions, Result as ExecResult } from 'execa';

/**
 * execa's `execa(file, args, options)`, loaded at its first call: every CLI process loads the dev server
 * launcher (the `server` command) and so this module, and loading execa took about 0.1 s of each start, for
 * the few commands that run a program through it.
 */
export function execa<OptionsType extends Execa.Options = object>(file: string | URL, args?: readonly string[], options?: OptionsType) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('execa') as typeof Execa).execa(file, args, options);
}
