/**
 * The file operations of `BashSession.edit` (edit.ts `EditIo`): each a fresh
 * helper process (this worker's Node running `EDIT_HELPER_SOURCE`) in the
 * session's sandbox and identity, with the exact-run hidden paths covered,
 * and bounded as an exact run is (exact-run.ts `exactLaunch`): the shell's
 * ulimits and OOM score, its pids and memory cgroups.
 */
import {
  EDIT_HELPER_SOURCE,
  MAX_EDIT_FILE_BYTES,
  MAX_VIEW_ENTRIES,
  MAX_VIEW_SCANNED,
  runEditHelper,
  type EditIo,
  type ReadReply,
  type WriteReply,
} from './edit';
import { EXACT_RUN_HIDDEN, staysInside } from './exact';
import { exactLaunch } from './exact-run';
import type { Launch } from './fds';
import type { ResolvedLimits } from './limits';
import type { SandboxOptions } from './sandbox';
import { symlinkOnTheWay, viewCheck } from './workspace';

/** What bounds the helper: the session's limits and the `cgroup.procs` files of the shell's cgroups (guard.ts `joinFiles`). */
export interface EditBounds {
  limits: ResolvedLimits;
  cgroups: readonly string[];
}

/**
 * The helper's file operations for one edit: paths relative to `cwd`, checked against `root` (the
 * workspace) in the view of the helper's sandbox, `signal` killing a helper under way. The helper
 * runs under `bounds` like an exact run, so its memory counts in the session's budget and the
 * kernel's OOM killer takes it (or another process of the session) at the session's limit; a
 * read that ends without an answer (killed at a limit or the time limit) is an error reply
 * (`code` `HELPER`), never a failure of the worker.
 * @throws ExactRefusedError when the limits cannot be applied (prlimit missing)
 */
export function editIo(sandbox: SandboxOptions, cwd: string, root: string, signal: AbortSignal | undefined, bounds: EditBounds): EditIo {
  const hide = [...sandbox.hide, ...EXACT_RUN_HIDDEN];
  // The helper is this worker's Node; bind it read-only when it lies in a hidden directory.
  const node = process.execPath;
  const readable = hide.some((h) => node.startsWith(`${h}/`)) ? [...sandbox.readable, node] : sandbox.readable;
  const launch: Launch = exactLaunch(node, [node, '-e', EDIT_HELPER_SOURCE], cwd, {
    limits: bounds.limits,
    sandbox: { ...sandbox, hide, readable },
    launcher: undefined,
    cgroups: bounds.cgroups,
  });
  return {
    staysInside: (abs) => staysInside(abs, root, viewCheck({ ...sandbox, hide, readable })),
    viaSymlink: (abs) => symlinkOnTheWay(root, abs),
    read: (abs) =>
      runEditHelper<ReadReply>(
        launch,
        cwd,
        { op: 'read', path: abs, root, maxBytes: MAX_EDIT_FILE_BYTES, maxEntries: MAX_VIEW_ENTRIES, maxScanned: MAX_VIEW_SCANNED },
        signal,
      ).catch((err: unknown): ReadReply => ({ ok: false, code: 'HELPER', message: (err as Error).message })),
    write: (real, content, expectSha256) =>
      runEditHelper<WriteReply>(
        launch,
        cwd,
        {
          op: 'write',
          path: real,
          root,
          data: Buffer.from(content, 'utf8').toString('base64'),
          expectSha256,
          maxBytes: MAX_EDIT_FILE_BYTES,
        },
        signal,
      ),
  };
}
