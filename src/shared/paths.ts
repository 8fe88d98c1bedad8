/** Path rules shared by the CLI and the worker (no Node built-in: src/shared is workflow-safe). */

/**
 * Whether the relative path `dir` names a place outside the folder it is relative to (`..`, `a/../..`), lexically,
 * as `path.normalize` reads it: a run's relative `workdir` is under the worker's workspace root (docs/cli.md,
 * `start --workdir`), and the worker resolves it with `path.resolve(root, dir)`, which follows `..` out of the root.
 */
export function leavesRoot(dir: string): boolean {
  let depth = 0;
  for (const part of dir.split('/')) {
    if (part === '' || part === '.') continue;
    depth += part === '..' ? -1 : 1;
    if (depth < 0) return true;
  }
  return false;
}

/**
 * Whether the relative path `dir` names the folder it is relative to itself (`.`, `a/..`, `./`), lexically as
 * {@link leavesRoot} reads it: a run's relative `workdir` of that kind is the worker's whole workspace root, which holds
 * every run's folder, and is refused (docs/cli.md, `start --workdir`).
 */
export function namesRoot(dir: string): boolean {
  let depth = 0;
  for (const part of dir.split('/')) {
    if (part === '' || part === '.') continue;
    depth += part === '..' ? -1 : 1;
    if (depth < 0) return false;
  }
  return depth === 0;
}
