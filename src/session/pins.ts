/**
 * Directories a session binds by descriptor, opened once when it starts: a sub-agent's git
 * directories (`BashSessionOptions.worktreeGit`), which lie in the parent's workspace, where the
 * parent's session can swap any of them for a symlink at any time.
 *
 * Why: a bind by path is resolved again at every launch (the shell, each exact run, the editor's
 * helper), after the worker checked it; a parent that swapped `.git/objects` for a symlink to a
 * directory every sandbox hides (another run's workspace, the owner's home) got its child a
 * writable bind of it. Here each directory is reached from `/` one component at a time, each
 * opened `O_PATH | O_DIRECTORY | O_NOFOLLOW` relative to the last one's descriptor, so no symlink
 * is followed anywhere on the way; the descriptor is then what is bound (bwrap `--bind-fd`, the
 * ACL grant walks from it), and the inode it names stays the one checked whatever the path
 * holds later. Attack test: test/unit/attack/adversary-round6.test.ts. Linux only (`O_PATH`, `/proc`).
 */
import { closeSync, constants, openSync } from 'node:fs';
import * as path from 'node:path';
import type { WorktreeGit } from '../contract/subagent';
import { O_PATH, openDirAt, PATH_DIR_FLAGS } from './safe-open';

/** A directory opened when the session started, bound at `dest` (its path then) by its descriptor. */
export interface PinnedDir {
  /** Where the sandbox shows it: its absolute path when it was opened (no symlink on the way then). */
  readonly dest: string;
  readonly writable: boolean;
  /** The worker's descriptor (`O_PATH`); -1 once {@link closePins} closed it. */
  fd: number;
}

/**
 * Opens the directory `rel` (relative and normal, `''` for `dirFd` itself) below the directory `dirFd`, one component at
 * a time, none of them a symlink.
 * @returns a new `O_PATH` descriptor of it (the caller closes it)
 * @throws Error (ELOOP, ENOTDIR, ENOENT) when a component is a symlink, no directory, or missing
 */
export function openDirBelow(dirFd: number, rel: string): number {
  let fd = openDirAt(dirFd, '.', PATH_DIR_FLAGS);
  try {
    for (const part of rel.split('/').filter((p) => p !== '')) {
      const next = openDirAt(fd, part, PATH_DIR_FLAGS);
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/**
 * Opens the absolute, normal path `abs` as a directory one component at a time from `/`, none
 * of them a symlink.
 * @returns an `O_PATH` descriptor of it
 * @throws Error (ELOOP, ENOTDIR, ENOENT) when a component is a symlink, no directory, or missing
 */
export function openDirNoFollow(abs: string): number {
  if (!path.isAbsolute(abs) || path.normalize(abs) !== abs) throw new Error(`${JSON.stringify(abs)} is not a normal absolute path`);
  const root = openSync('/', O_PATH | constants.O_DIRECTORY);
  try {
    return openDirBelow(root, abs.slice(1));
  } finally {
    closeSync(root);
  }
}

/**
 * Pins what a sub-agent's sandbox binds of its git worktree: the common dir (read-only), its
 * `objects` and the worktree's gitdir `<commonDir>/worktrees/<name>` (writable), each reached
 * without following a symlink (`objects` and `worktrees/<name>` from the common dir's descriptor).
 * @returns the pins, in the order bwrap mounts them (the common dir first, the deeper two over it)
 * @throws Error saying which directory could not be opened so (a symlink on the way, missing), or
 *   when `gitDir` is not in `<commonDir>/worktrees`
 */
export function pinWorktreeGit(git: WorktreeGit): PinnedDir[] {
  const { commonDir, gitDir } = git;
  if (path.dirname(gitDir) !== path.join(commonDir, 'worktrees')) throw new Error(`${gitDir} is not in ${commonDir}/worktrees`);
  const pins: PinnedDir[] = [];
  const open = (dest: string, writable: boolean, how: () => number): number => {
    let fd: number;
    try {
      fd = how();
    } catch (err) {
      throw new Error(
        `${dest} is no directory reached without a symlink: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        { cause: err },
      );
    }
    pins.push({ dest, writable, fd });
    return fd;
  };
  try {
    const common = open(commonDir, false, () => openDirNoFollow(commonDir));
    open(path.join(commonDir, 'objects'), true, () => openDirAt(common, 'objects', PATH_DIR_FLAGS));
    const worktrees = openDirAt(common, 'worktrees', PATH_DIR_FLAGS);
    try {
      open(gitDir, true, () => openDirAt(worktrees, path.basename(gitDir), PATH_DIR_FLAGS));
    } finally {
      closeSync(worktrees);
    }
    return pins;
  } catch (err) {
    closePins(pins);
    throw err;
  }
}

/** A session's pinned git directories, or why there are none. */
export interface GitPins {
  pins: PinnedDir[];
  /** Why `git` asked for some and none are pinned (one line); undefined otherwise. */
  refused?: string;
}

/**
 * {@link pinWorktreeGit} for a session's `worktreeGit` option: no pins when none is asked for,
 * and none with the reason when one of the directories cannot be opened without following a
 * symlink (the parent's session swapped it): the child then runs without git's binds, as a child
 * whose checked paths fail does (activities' `checkedWorktreeGit`).
 */
export function pinGit(git: WorktreeGit | undefined): GitPins {
  if (!git) return { pins: [] };
  try {
    return { pins: pinWorktreeGit(git) };
  } catch (err) {
    return { pins: [], refused: (err as Error).message };
  }
}

/** Closes the pins' descriptors (once; a launch that comes later refuses them: fds.ts `launchStdio`). */
export function closePins(pins: readonly PinnedDir[]): void {
  for (const p of pins) {
    if (p.fd < 0) continue;
    closeSync(p.fd);
    p.fd = -1;
  }
}
