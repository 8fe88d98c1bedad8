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
export { execa, type Options as ExecOptions, type Result as ExecResult } from 'execa';
