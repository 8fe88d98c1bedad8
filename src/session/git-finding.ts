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

/**
 * How a note on findings is laid out: `line`, one line for a command's result and the worker's log (parts joined by
 * `; `, at most 5 findings of a kind named, joined by `, `); `lines`, for a person reading what a session left at close
 * (`status`, `watch` and `transcript` of the closed run): each part a line of its own and each finding one of its own
 * under it, indented by two spaces, at most 20 of a kind; the lines are joined by {@link NOTE_LINE_BREAK}, which no
 * finding holds, so that a line break in a path stays inside its line ({@link noteLines} splits them).
 */
export type NoteLayout = 'line' | 'lines';

/** What ends a line of a note laid out as `lines` (NUL: no path or git file's line holds one; a finding's is replaced). */
export const NOTE_LINE_BREAK = '\0';

/**
 * `items` (already cut to {@link notedMost}) as a note in `layout` lays them out, after a label that ends in `:`, with
 * `more` left out: ` a, b and 3 more`, or each on a line of its own indented by two spaces.
 */
export function notedList(items: readonly string[], more: number, layout: NoteLayout): string {
  if (layout === 'line') return ` ${items.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
  return [...items, ...(more > 0 ? [`and ${more} more`] : [])]
    .map((i) => `${NOTE_LINE_BREAK}  ${i.replaceAll(NOTE_LINE_BREAK, '\uFFFD')}`)
    .join('');
}

/** How many findings of one kind a note in `layout` names: 5 on one line, 20 on lines. */
export const notedMost = (layout: NoteLayout): number => (layout === 'line' ? 5 : 20);

/** What joins the parts of a note in `layout`: `; ` on one line, {@link NOTE_LINE_BREAK} on lines. */
export const noteJoin = (layout: NoteLayout): string => (layout === 'line' ? '; ' : NOTE_LINE_BREAK);

/** The lines of a note laid out as `lines` (a line may hold a line break of a path: print each on one line, escaped). */
export const noteLines = (note: string): string[] => note.split(NOTE_LINE_BREAK);
