/**
 * Which workspace paths git refuses to write on checkout: a port of git's `verify_path`
 * (read-cache.c, with `core.protectNTFS` and `core.protectHFS` both on, whatever the platform's
 * defaults, and path.c's `is_ntfs_dotgit`, `is_ntfs_dotgitmodules`, `is_hfs_dotgit`,
 * `is_hfs_dotgitmodules`). A checkpoint holding such a path cannot be restored: `read-tree -u`
 * dies `invalid path` and writes nothing (adversary round 26), so a checkpoint leaves them out
 * and names them, and a restore never writes one. Paths are workspace-relative, each byte of the
 * name one `latin1` character (as store.ts `measure` spells them).
 */

/** What is at the path: git checks a symlink's name more strictly (`.gitmodules` as a symlink is refused). */
export type GitPathKind = 'file' | 'link';

/** Code points HFS+ ignores in a name (git's `next_hfs_char`): `.g\u200cit` is `.git` there. */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/gu;

/**
 * Whether git's `verify_path` refuses `path` (an entry of kind `kind`), with `core.protectNTFS`
 * and `core.protectHFS` on: an empty, `.` or `..` component; a component `.git` in any case; a
 * component that NTFS would read as `.git` (`git~1`, `.git.`, `.git ` and so on, `.git:stream`), or
 * HFS+ would (`.git` with ignorable code points); a backslash followed by such a name; and, for a
 * symlink, a component `.gitmodules` in any case and its NTFS and HFS+ spellings (`gitmod~1`).
 */
export function gitRefusesPath(path: string, kind: GitPathKind): boolean {
  const link = kind === 'link';
  const components = path.split('/');
  for (let i = 0; i < components.length; i++) {
    const name = components[i]!;
    // git's checks at a component's start read the rest of the path (a name is ended by `/`, `\` or `:` as NTFS reads it).
    const rest = components.slice(i).join('/');
    if (name === '' || name === '.' || name === '..') return true;
    if (/^\.git$/i.test(name) || (link && /^\.gitmodules$/i.test(name))) return true;
    if (isNtfsDotGit(rest) || (link && isNtfsDotGitmodules(rest))) return true;
    if (isHfsDot(name, 'git') || (link && isHfsDot(name, 'gitmodules'))) return true;
    // A backslash is a folder separator to Windows: what follows one is checked as a name too.
    for (let at = name.indexOf('\\'); at >= 0; at = name.indexOf('\\', at + 1)) {
      const after = [name.slice(at + 1), ...components.slice(i + 1)].join('/');
      if (isNtfsDotGit(after) || (link && isNtfsDotGitmodules(after))) return true;
    }
  }
  return false;
}

/**
 * Whether every path below the folder `path` is refused, whatever its kind (`.GIT/`, `git~1/`): a
 * checkpoint leaves the folder out whole and does not walk it.
 */
export function gitRefusesFolder(path: string): boolean {
  return gitRefusesPath(`${path}/x`, 'file');
}

/** git's `is_ntfs_dotgit`: `name` starts with `.git` or `git~1` (any case), then only dots and spaces up to its end, `/`, `\` or `:`. */
function isNtfsDotGit(name: string): boolean {
  const m = /^(?:\.git|git~1)/i.exec(name);
  if (!m) return false;
  for (const c of name.slice(m[0].length)) {
    if (c === '/' || c === '\\' || c === ':') return true;
    if (c !== '.' && c !== ' ') return false;
  }
  return true;
}

/** git's `is_ntfs_dot_generic` for `.gitmodules` (short name prefix `gi7eba`): the long name, `gitmod~1` to `~4`, or a fall-back 8.3 name. */
function isNtfsDotGitmodules(name: string): boolean {
  const onlySpacesAndPeriods = (from: number): boolean => {
    for (const c of name.slice(from)) {
      if (c === ':') return true;
      if (c !== ' ' && c !== '.') return false;
    }
    return true;
  };
  if (name.startsWith('.') && name.slice(1, 11).toLowerCase() === 'gitmodules') return onlySpacesAndPeriods(11);
  if (name.slice(0, 6).toLowerCase() === 'gitmod' && name[6] === '~' && name[7]! >= '1' && name[7]! <= '4') return onlySpacesAndPeriods(8);
  // The fall-back short name: up to six characters of `gi7eba`, then `~` and a digit 1-9, then digits, eight characters in all.
  const prefix = 'gi7eba';
  let sawTilde = false;
  for (let i = 0; i < 8; i++) {
    const c = name[i];
    if (c === undefined) return false;
    if (sawTilde) {
      if (c < '0' || c > '9') return false;
    } else if (c === '~') {
      i++;
      const d = name[i];
      if (d === undefined || d < '1' || d > '9') return false;
      sawTilde = true;
    } else if (i >= 6 || c.charCodeAt(0) >= 0x80 || c.toLowerCase() !== prefix[i]) return false;
  }
  return onlySpacesAndPeriods(8);
}

/** git's `is_hfs_dot_generic`: the component, read as UTF-8 with the code points HFS+ ignores left out, is `.` and `needle` in any ASCII case. */
function isHfsDot(name: string, needle: string): boolean {
  if (!/[^\x00-\x7f]/.test(name)) return false;
  const text = Buffer.from(name, 'latin1').toString('utf8');
  // git reads malformed UTF-8 as no match.
  if (Buffer.from(text, 'utf8').toString('latin1') !== name) return false;
  const folded = text.replace(HFS_IGNORED, '');
  return (
    folded.length === needle.length + 1 && folded[0] === '.' && /^[\x00-\x7f]*$/.test(folded) && folded.slice(1).toLowerCase() === needle
  );
}
