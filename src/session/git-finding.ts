/**
 * What the git audit found (src/session/git-audit.ts and the audits it calls: git-index-audit.ts,
 * git-objects-audit.ts, git-state-audit.ts, git-held.ts), in a module of its own so that those import it
 * without importing the audit that calls them.
 */

/** One thing the audit found, and what it did about it. */
export interface GitFinding {
  /** Absolute path of what was found. */
  readonly path: string;
  /** Why the person's git would obey it (one phrase). */
  readonly why: string;
  /** Where it was moved (absolute), `dropped` for a packed ref, or undefined when it could not be moved. */
  readonly movedTo: string | undefined;
  /** Set when it was renamed in its own folder, the quarantine being unusable. */
  readonly inPlace?: true;
  /** Set for the finding that part of the workspace was not checked (the walk did not finish): `path` is the workspace. */
  readonly unchecked?: true;
  /** Set when the audit put back the held symlink at `path` ({@link HeldLink}): what it says. */
  readonly relinked?: string;
  /**
   * Set for what the person's `git status` would not show (git-index-audit.ts): `shown` when git sees it again (a bit
   * or stat data cleared), `ignored` for a file ignored by a rule the session wrote (left, named), `unlisted` for one
   * the session made or changed where the person's own ignore rules hide it (left, named), `removed` for Python
   * bytecode the session wrote (removed), `failed` when it could not be shown again, `partial` when ignored files (or a
   * nested repository) were not all read, `nested` for what the session changed in a repository nested in the
   * workspace (named, left), `state` for git state the session left that the person's next git command obeys (a moved
   * branch or ref, an operation in progress; git-state-audit.ts; named, left).
   */
  readonly hidden?: 'shown' | 'ignored' | 'unlisted' | 'nested' | 'removed' | 'failed' | 'partial' | 'state';
}
