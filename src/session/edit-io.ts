/**
 * The file operations of `BashSession.edit` (edit.ts `EditIo`): each a fresh
 * helper process (this worker's Node running `EDIT_HELPER_SOURCE`) in the
 * session's sandbox and identity, with the exact-run hidden paths covered.
 */
import {
  EDIT_HELPER_SOURCE,
  MAX_EDIT_FILE_BYTES,
  MAX_VIEW_ENTRIES,
  runEditHelper,
  type EditIo,
  type ReadReply,
  type WriteReply,
} from './edit';
import { EXACT_RUN_HIDDEN, staysInside } from './exact';
import { sandboxedSpawnArgs, type SandboxOptions } from './sandbox';
import { symlinkOnTheWay, viewCheck } from './workspace';

/**
 * The helper's file operations for one edit: paths relative to `cwd`, checked against `root` (the
 * workspace) in the view of the helper's sandbox, `signal` killing a helper under way.
 */
export function editIo(sandbox: SandboxOptions, cwd: string, root: string, signal: AbortSignal | undefined): EditIo {
  const hide = [...sandbox.hide, ...EXACT_RUN_HIDDEN];
  // The helper is this worker's Node; bind it read-only when it lies in a hidden directory.
  const node = process.execPath;
  const readable = hide.some((h) => node.startsWith(`${h}/`)) ? [...sandbox.readable, node] : sandbox.readable;
  const launch = sandboxedSpawnArgs({ ...sandbox, hide, readable }, [node, '-e', EDIT_HELPER_SOURCE], cwd);
  return {
    staysInside: (abs) => staysInside(abs, root, viewCheck({ ...sandbox, hide, readable })),
    viaSymlink: (abs) => symlinkOnTheWay(root, abs),
    read: (abs) =>
      runEditHelper<ReadReply>(
        launch,
        cwd,
        { op: 'read', path: abs, root, maxBytes: MAX_EDIT_FILE_BYTES, maxEntries: MAX_VIEW_ENTRIES },
        signal,
      ),
    write: (abs, content, expectSha256) =>
      runEditHelper<WriteReply>(
        launch,
        cwd,
        {
          op: 'write',
          path: abs,
          root,
          data: Buffer.from(content, 'utf8').toString('base64'),
          expectSha256,
          maxBytes: MAX_EDIT_FILE_BYTES,
        },
        signal,
      ),
  };
}
