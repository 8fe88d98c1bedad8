/**
 * The text editor tool (`text_editor_20250728`) applied to a session's workspace: where a path
 * points, what each command shows or changes, and the helper process that touches the files.
 *
 * Rules from https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool
 * ("docs" below): `view` returns the file with each line prefixed by its number (`1: def
 * is_prime(n):`), or a directory's contents; `view_range` is 1-indexed, end -1 = to the end;
 * `max_characters` truncates the contents shown; `str_replace` must match exactly one place;
 * `insert` puts text after line `insert_line` (0 = the beginning). The error texts the page
 * gives are used as given: `Error: File not found`, `Error: Found N matches for replacement
 * text. Please provide more context to make a unique match.`, `Error: No match found for
 * replacement. Please check your text and try again.`, `Error: Permission denied. Cannot write
 * to file.`; success of `str_replace`: `Successfully replaced text at exactly one location.`
 * Texts the page does not give are this module's own (docs/text-editor.md lists them).
 *
 * Every file operation runs in a helper process (`node -e`, the worker's own Node, with a
 * self-contained script: request on stdin, JSON answer on stdout) as the session's user inside
 * a fresh sandbox like the session's (`sandboxedSpawnArgs`), under the session's limits as an
 * exact run (edit-io.ts), so an edit reaches and holds only what a command of the session could
 * (why: docs/text-editor.md, "Where edits run").
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import type { EditRequest } from '../contract/text-editor';
import { countLines, editDiff, lineOffset, MAX_DIFF_SIDE_CHARS, MAX_DIFF_SIDE_LINES, splitLines, type EditDiff } from './edit-diff';
import { launchStdio, type Launch } from './fds';

/** Largest file the editor reads or writes, in bytes: 10 MiB (the diff and the view stay far below the payload limit anyway). */
export const MAX_EDIT_FILE_BYTES = 10 * 1024 * 1024;

/** Entries a directory `view` lists at most (two levels deep). */
export const MAX_VIEW_ENTRIES = 1_000;

/**
 * Directory entries a `view` reads at most, all its directories together (the helper reads each
 * directory entry by entry and stops there; the entries shown are the first of each directory's
 * read ones in name order): 10,000, about 2.5 MiB of names at most, so a folder of a million
 * entries costs the helper what one of 10,000 does.
 */
export const MAX_VIEW_SCANNED = 10_000;

/** How long one helper process may take, ms. */
export const EDIT_HELPER_TIMEOUT_MS = 30_000;

/** The review's first line when `abs` resolves (through a symlink) to another path `real`: the file a change writes. */
export function throughSymlinkLine(abs: string, real: string): string {
  return `# ${abs} goes through a symlink: this change writes ${real}`;
}

/** SHA-256 hex of a string's UTF-8 bytes (or of bytes). */
export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Where an editor path points, or the `is_error` text when it may not be used. */
export function resolveEditPath(p: string, cwd: string, workspace: string): { abs: string } | { error: string } {
  if (p.split('/').includes('..')) {
    return { error: `Error: the path ${p} has a ".." component; the editor takes paths inside the workspace ${workspace} without ".."` };
  }
  const abs = path.posix.resolve(cwd, p);
  if (abs !== workspace && !abs.startsWith(`${workspace}/`)) {
    return { error: `Error: ${abs} is outside the workspace ${workspace}; the editor works only on files inside it` };
  }
  return { abs };
}

/**
 * What the helper found at a path. `real`: where the file read (or, `ENOENT`, the one a create makes) is, symlinks
 * resolved, named from the workspace path the helper was given; the write goes there and nowhere else.
 */
export type ReadReply =
  | { ok: true; kind: 'file'; data: string; mode: number; sha256: string; real?: string }
  | { ok: true; kind: 'dir'; entries: string[]; more: boolean }
  | { ok: false; code: string; message: string; real?: string };

/** How the helper's write went. */
export type WriteReply = { ok: true } | { ok: false; code: string; message: string };

/** What a command does, once the file was read: a text for Claude, or a new content to write (after approval). */
export type EditPlan =
  | { kind: 'result'; text: string; isError: boolean }
  | { kind: 'change'; before: string | null; after: string; expectSha256: string | null; mode: number | null; success: string };

/** The `is_error` text for a helper failure (`code` as the helper gives it). */
export function failureText(code: string, message: string, abs: string, writing: boolean): string {
  if (code === 'ENOENT') return 'Error: File not found';
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return writing ? 'Error: Permission denied. Cannot write to file.' : 'Error: Permission denied. Cannot read file.';
  }
  if (code === 'OUTSIDE') return `Error: ${abs} resolves outside the workspace (${message}); the editor works only on files inside it`;
  if (code === 'TOOBIG') return `Error: ${abs} is ${message} bytes; the editor handles files up to ${MAX_EDIT_FILE_BYTES} bytes`;
  if (code === 'NOTFILE') return `Error: ${abs} is not a regular file or directory`;
  if (code === 'EISDIR') return `Error: ${abs} is a directory`;
  if (code === 'SWAPPED')
    return `Error: the path changed since it was reviewed: ${message} is now a symlink or no longer a folder, which the reviewed change did not go through; nothing was written. View it again and retry.`;
  if (code === 'CHANGED') return `Error: ${abs} changed while the edit was being made; nothing was written. View it again and retry.`;
  if (code === 'HELPER')
    return `Error: ${abs} could not be read: ${message} (the editor's helper runs under the session's limits: memory, processes, ulimits, ${EDIT_HELPER_TIMEOUT_MS} ms)`;
  return `Error: ${message}`;
}

/** The file's bytes as text, or why they are not text the editor can show and change (UTF-8 without NUL). */
function asText(data: Buffer): string | null {
  if (data.includes(0)) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(data);
  } catch {
    return null;
  }
}

/** `count` non-overlapping occurrences of `needle` in `hay`. */
function occurrences(hay: string, needle: string): number {
  let n = 0;
  for (let at = hay.indexOf(needle); at !== -1; at = hay.indexOf(needle, at + needle.length)) n++;
  return n;
}

/**
 * `text` cut to `max` characters (code points, as the string iterator counts them: a lone surrogate is one), with a
 * note saying so. One pass over the text's code units, no array of its characters (a 10 MiB file is 10 million).
 */
function truncated(text: string, max: number): { text: string; note: string } {
  // A text of at most `max` code units has at most `max` code points.
  if (text.length <= max) return { text, note: '' };
  let chars = 0;
  let cutAt = text.length;
  for (let i = 0; i < text.length; chars++) {
    if (chars === max) cutAt = i;
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
  }
  if (chars <= max) return { text, note: '' };
  return {
    text: text.slice(0, cutAt),
    note: `\n[truncated: the view shows ${max} of ${chars} characters (max_characters); use view_range to see the rest]`,
  };
}

/**
 * A `view` of a file: the selected lines, each prefixed `N: ` (docs example), the contents cut
 * to `maxCharacters` first (docs: "truncate the file contents to that length"). Only what is
 * shown is split into lines; the rest of the file is scanned, never copied line by line.
 */
export function viewFile(
  content: string,
  viewRange: [number, number] | undefined,
  maxCharacters: number,
): { text: string; isError: boolean } {
  const count = countLines(content);
  let start = 1;
  let end = count;
  if (viewRange !== undefined) {
    const [s, e] = viewRange;
    if (s < 1 || (count > 0 && s > count) || (count === 0 && s !== 1)) {
      return {
        text: `Error: Invalid view_range [${s}, ${e}]: the file has ${count} lines, so start_line must be between 1 and ${Math.max(1, count)}`,
        isError: true,
      };
    }
    if (e !== -1 && e < s)
      return { text: `Error: Invalid view_range [${s}, ${e}]: end_line must be -1 or at least start_line`, isError: true };
    start = s;
    end = e === -1 ? count : Math.min(e, count);
  }
  const from = lineOffset(content, start - 1);
  const selected = content.slice(from, end >= count ? content.length : lineOffset(content, end - start + 1, from));
  const cut = truncated(selected, maxCharacters);
  const shown = splitLines(cut.text).map((l, i) => `${start + i}: ${l.endsWith('\n') ? l.slice(0, -1) : l}`);
  return { text: `${shown.join('\n')}${cut.note}`, isError: false };
}

/** A `view` of a directory: what is in it, two levels deep, hidden entries left out. */
export function viewDirectory(abs: string, entries: string[], more: boolean, maxCharacters: number): string {
  const head = `Files and directories up to 2 levels deep in ${abs}, hidden items excluded:`;
  const body = entries.length > 0 ? entries.join('\n') : '(empty directory)';
  const cutNote = more ? `\n[listing cut: at most ${MAX_VIEW_ENTRIES} entries are shown and ${MAX_VIEW_SCANNED} read]` : '';
  const cut = truncated(`${head}\n${body}${cutNote}`, maxCharacters);
  return `${cut.text}${cut.note}`;
}

/**
 * What `edit` does to the file as read (`read` null: the path names nothing yet). Pure.
 * @param abs the absolute path (named in texts)
 */
export function planEdit(edit: EditRequest, abs: string, read: ReadReply, maxCharacters: number): EditPlan {
  const missing = !read.ok && read.code === 'ENOENT';
  if (!read.ok && !(missing && edit.command === 'create'))
    return { kind: 'result', text: failureText(read.code, read.message, abs, false), isError: true };
  if (read.ok && read.kind === 'dir') {
    if (edit.command === 'view')
      return { kind: 'result', text: viewDirectory(abs, read.entries, read.more, maxCharacters), isError: false };
    return { kind: 'result', text: `Error: ${abs} is a directory; ${edit.command} needs a file`, isError: true };
  }
  const file = read.ok && read.kind === 'file' ? read : null;
  const content = file ? asText(Buffer.from(file.data, 'base64')) : null;
  if (file && content === null) {
    return { kind: 'result', text: `Error: ${abs} is not a UTF-8 text file; the editor shows and changes text files only`, isError: true };
  }
  const change = (after: string, success: string): EditPlan => ({
    kind: 'change',
    before: content,
    after,
    expectSha256: file ? file.sha256 : null,
    mode: file ? file.mode : null,
    success,
  });
  switch (edit.command) {
    case 'view': {
      if (edit.viewRange !== undefined && content === '') return { kind: 'result', text: '(empty file)', isError: false };
      const v = viewFile(content!, edit.viewRange, maxCharacters);
      return { kind: 'result', text: v.text === '' ? '(empty file)' : v.text, isError: v.isError };
    }
    case 'create':
      return change(edit.fileText, `Successfully created file ${abs}.${file ? ' (It existed: its contents were replaced.)' : ''}`);
    case 'str_replace': {
      const n = occurrences(content!, edit.oldStr);
      if (n === 0)
        return { kind: 'result', text: 'Error: No match found for replacement. Please check your text and try again.', isError: true };
      if (n > 1) {
        return {
          kind: 'result',
          text: `Error: Found ${n} matches for replacement text. Please provide more context to make a unique match.`,
          isError: true,
        };
      }
      const at = content!.indexOf(edit.oldStr);
      return change(
        content!.slice(0, at) + edit.newStr + content!.slice(at + edit.oldStr.length),
        'Successfully replaced text at exactly one location.',
      );
    }
    case 'insert': {
      const count = countLines(content!);
      if (edit.insertLine > count) {
        return {
          kind: 'result',
          text: `Error: Invalid insert_line ${edit.insertLine}: the file has ${count} lines, so insert_line must be between 0 and ${count}`,
          isError: true,
        };
      }
      const at = lineOffset(content!, edit.insertLine);
      // A line break the edit adds is the file's own: CRLF in a file whose first line ends so.
      const eol = lineEnding(content!);
      let before = content!.slice(0, at);
      if (before !== '' && !before.endsWith('\n')) before += eol;
      const text = edit.insertText.endsWith('\n') || edit.insertText === '' ? edit.insertText : `${edit.insertText}${eol}`;
      return change(before + text + content!.slice(at), `Successfully inserted text after line ${edit.insertLine}.`);
    }
  }
}

/** The line ending of `content`: `\r\n` when its first line ends so, else `\n` (a file with no line break too). */
function lineEnding(content: string): '\n' | '\r\n' {
  const nl = content.indexOf('\n');
  return nl > 0 && content[nl - 1] === '\r' ? '\r\n' : '\n';
}

/** The diff a person approves for a change plan, with the lines it leaves out (src/session/edit-diff.ts `editDiff`). */
export function planDiff(abs: string, plan: Extract<EditPlan, { kind: 'change' }>): EditDiff {
  return editDiff(abs, plan.before, plan.after);
}

/**
 * The helper, run as `node -e` in the sandbox as the session user. Request on stdin (JSON):
 * `{op: "read", path, root, maxBytes, maxEntries, maxScanned}` or `{op: "write", path, root, data (base64),
 * expectSha256 (null: must not exist), maxBytes}`. Answer on stdout (JSON): see {@link ReadReply}
 * and {@link WriteReply}. A read checks the path again here, with realpath, against `root`: the
 * target (or its nearest existing ancestor) must resolve inside it; it answers where it read
 * (`real`). A write's `path` is that `real`: it is walked from `root` one component at a time with
 * `O_NOFOLLOW` (a symlink on the way, or at the file, is refused: `SWAPPED`), missing folders made
 * on the way; the data goes to a temporary file beside the target, then a rename over it (the file
 * is old or new, never half written), with the old file's mode. MAINTENANCE: plain
 * JavaScript in a string (it runs in a process with no access to this repository's files).
 */
export const EDIT_HELPER_SOURCE = String.raw`
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const out = (o) => process.stdout.write(JSON.stringify(o));
const fail = (code, message) => out({ ok: false, code, message: String(message) });
let req;
try { req = JSON.parse(fs.readFileSync(0, 'utf8')); } catch (e) { fail('BADREQUEST', e.message); process.exit(0); }
const root = fs.realpathSync(req.root);
const inside = (p) => p === root || p.startsWith(root === '/' ? '/' : root + '/');
// A path inside root as the worker names it (from req.root, which may itself be reached through a symlink).
const named = (p) => (p === root ? path.resolve(req.root) : path.join(path.resolve(req.root), path.relative(root, p)));
function realOf(p) {
  let probe = p; let rest = [];
  for (;;) {
    try { return path.join(fs.realpathSync(probe), ...rest); } catch (e) {
      if (e.code !== 'ENOENT') throw e;
      const up = path.dirname(probe); if (up === probe) throw e;
      rest.unshift(path.basename(probe)); probe = up;
    }
  }
}
function sha(buf) { return crypto.createHash('sha256').update(buf).digest('hex'); }
// Where an open descriptor really is (the kernel's path of it, symlinks resolved as they were when it was opened).
const whereFd = (fd) => fs.readlinkSync('/proc/self/fd/' + fd);
const fdPath = (fd) => '/proc/self/fd/' + fd;
// Opens a directory (not through a symlink at its last component) and checks it is inside root; throws OUTSIDE otherwise.
function openDirInside(p) {
  const fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
  const where = whereFd(fd);
  if (!inside(where)) { fs.closeSync(fd); const e = new Error(where); e.code = 'OUTSIDE'; throw e; }
  return fd;
}
// Lists two levels deep, reading at most req.maxScanned entries in all (one at a time, never a whole directory at once).
function list(dir) {
  const entries = []; let more = false; let scanned = 0;
  const walk = (dfd, rel, depth) => {
    const items = [];
    let d;
    try { d = fs.opendirSync(fdPath(dfd), { bufferSize: 256 }); } catch (e) { return; }
    try {
      for (let it = d.readSync(); it !== null; it = d.readSync()) {
        if (++scanned > req.maxScanned) { more = true; break; }
        if (!it.name.startsWith('.')) items.push({ name: it.name, dir: it.isDirectory() });
      }
    } catch (e) { /* unreadable part way: what was read is listed */ } finally { d.closeSync(); }
    items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const it of items) {
      if (entries.length >= req.maxEntries) { more = true; return; }
      const r = rel ? rel + '/' + it.name : it.name;
      entries.push(it.dir ? r + '/' : r);
      if (it.dir && depth < 2) {
        let cfd;
        try { cfd = openDirInside(fdPath(dfd) + '/' + it.name); } catch (e) { continue; }
        try { walk(cfd, r, depth + 1); } finally { fs.closeSync(cfd); }
      }
    }
  };
  const fd = openDirInside(dir);
  try { walk(fd, '', 1); } finally { fs.closeSync(fd); }
  return { ok: true, kind: 'dir', entries, more };
}
// The file's bytes, or null when it holds more than max (it grew since fstat): never more than max + 1 bytes are read,
// into a buffer sized by what fstat said (size), grown as needed.
function readAtMost(fd, max, size) {
  let buf = Buffer.allocUnsafe(Math.min(max, size) + 1);
  let n = 0;
  for (;;) {
    if (n === buf.length) {
      if (n > max) return null;
      const bigger = Buffer.allocUnsafe(Math.min(max + 1, buf.length * 2));
      buf.copy(bigger, 0, 0, n);
      buf = bigger;
    }
    const got = fs.readSync(fd, buf, n, buf.length - n, null);
    if (got === 0) break;
    n += got;
  }
  return n > max ? null : buf.subarray(0, n);
}
function read() {
  const real = realOf(req.path);
  if (!inside(real)) return fail('OUTSIDE', real);
  let st;
  try { st = fs.statSync(real); } catch (e) {
    // A file to create: where it would be, so the write makes that one and no other.
    if (e.code === 'ENOENT') return out({ ok: false, code: 'ENOENT', message: real, real: named(real) });
    throw e;
  }
  if (st.isDirectory()) return out(list(real));
  if (!st.isFile()) return fail('NOTFILE', real);
  if (st.size > req.maxBytes) return fail('TOOBIG', st.size);
  const fd = fs.openSync(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    // A directory on the way may have been swapped for a symlink since realpath: the kernel says where the file opened is.
    const where = whereFd(fd);
    if (!inside(where)) return fail('OUTSIDE', where);
    const fst = fs.fstatSync(fd);
    if (!fst.isFile()) return fail('NOTFILE', real);
    if (fst.size > req.maxBytes) return fail('TOOBIG', fst.size);
    const data = readAtMost(fd, req.maxBytes, fst.size);
    if (data === null) return fail('TOOBIG', '> ' + req.maxBytes);
    out({ ok: true, kind: 'file', data: data.toString('base64'), mode: fst.mode & 0o7777, sha256: sha(data), real: named(where) });
  } finally { fs.closeSync(fd); }
}
// A component that is not now what the read found there (a symlink, or no longer a folder): the write stops.
function swapped(shown) { const e = new Error(shown); e.code = 'SWAPPED'; return e; }
// Opens the folder root/parts[0]/... one component at a time through the descriptor of the one above, never following a
// symlink, making missing ones; a component that is a symlink or not a folder now throws SWAPPED. The folder opened is
// the one the path named when it was opened, whatever a job renames or links on the way before or after.
function openWalk(parts) {
  const flags = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;
  const open = (at, shown) => {
    try { return fs.openSync(at, flags); } catch (e) { throw e.code === 'ELOOP' || e.code === 'ENOTDIR' ? swapped(shown) : e; }
  };
  let dfd = openDirInside(root);
  try {
    for (let i = 0; i < parts.length; i++) {
      const at = fdPath(dfd) + '/' + parts[i];
      const shown = path.join(req.root, ...parts.slice(0, i + 1));
      let next;
      try { next = open(at, shown); } catch (e) {
        if (e.code !== 'ENOENT') throw e;
        try { fs.mkdirSync(at); } catch (m) { if (m.code !== 'EEXIST') throw m; }
        next = open(at, shown);
      }
      fs.closeSync(dfd); dfd = next;
    }
    const where = whereFd(dfd);
    if (!inside(where)) { const e = new Error(where); e.code = 'OUTSIDE'; throw e; }
  } catch (e) { fs.closeSync(dfd); throw e; }
  return dfd;
}
// req.path is where the read found the file (symlinks resolved then): the write goes there with no symlink followed.
function write() {
  const data = Buffer.from(req.data, 'base64');
  if (data.length > req.maxBytes) return fail('TOOBIG', data.length);
  const rel = path.relative(path.resolve(req.root), path.resolve(req.path));
  if (rel === '') return fail('EISDIR', req.path);
  if (rel === '..' || rel.startsWith('../') || path.isAbsolute(rel)) return fail('OUTSIDE', req.path);
  const parts = rel.split('/');
  const base = parts.pop();
  const dfd = openWalk(parts);
  try {
    const pinned = fdPath(dfd);
    const target = pinned + '/' + base;
    let mode = null; let current = null;
    try {
      const st = fs.lstatSync(target);
      if (st.isSymbolicLink()) return fail('SWAPPED', req.path);
      if (!st.isFile()) return fail(st.isDirectory() ? 'EISDIR' : 'NOTFILE', req.path);
      mode = st.mode & 0o7777;
      const rfd = fs.openSync(target, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
      try { const old = readAtMost(rfd, req.maxBytes, st.size); current = old === null ? 'TOOBIG' : sha(old); } finally { fs.closeSync(rfd); }
    } catch (e) { if (e.code === 'ELOOP') return fail('SWAPPED', req.path); if (e.code !== 'ENOENT') throw e; }
    if (current !== req.expectSha256) return fail('CHANGED', req.path);
    const tmp = pinned + '/.' + base + '.edit-' + process.pid + '-' + crypto.randomBytes(4).toString('hex');
    const fd = fs.openSync(tmp, 'wx', mode === null ? 0o666 : 0o600);
    try { fs.writeFileSync(fd, data); fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
    // rename replaces the name itself: a symlink put there since the check is replaced, never followed.
    try { if (mode !== null) fs.chmodSync(tmp, mode); fs.renameSync(tmp, target); } catch (e) { try { fs.unlinkSync(tmp); } catch {} throw e; }
  } finally { fs.closeSync(dfd); }
  out({ ok: true });
}
try { if (req.op === 'read') read(); else if (req.op === 'write') write(); else fail('BADREQUEST', 'unknown op'); }
catch (e) { fail(e.code || 'ERROR', e.message); }
`;

/** Environment of the helper: nothing of the worker's (no NODE_OPTIONS, no secrets). */
export const EDIT_HELPER_ENV: Readonly<Record<string, string>> = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' };

/**
 * Runs the helper once: `launch` (the sandboxed command line around `node -e <source>`)
 * with `request` on stdin; resolves with its JSON answer. Kills it after
 * {@link EDIT_HELPER_TIMEOUT_MS} or on abort.
 * @throws Error when it does not answer with JSON (it crashed, was killed, or Node is not in the sandbox)
 */
export function runEditHelper<T>(launch: Launch, cwd: string, request: object, signal?: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(launch.file, launch.args, {
      cwd,
      env: { ...EDIT_HELPER_ENV },
      stdio: launchStdio(launch, ['pipe', 'pipe', 'pipe']),
      detached: true,
    }) as ChildProcessWithoutNullStreams;
    const outChunks: Buffer[] = [];
    const errChunks: Buffer[] = [];
    const kill = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    };
    const timer = setTimeout(kill, EDIT_HELPER_TIMEOUT_MS);
    signal?.addEventListener('abort', kill, { once: true });
    child.stdout.on('data', (c: Buffer) => outChunks.push(c));
    child.stderr.on('data', (c: Buffer) => errChunks.length < 64 && errChunks.push(c));
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`the edit helper could not start: ${err.message}`));
    });
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', kill);
      const text = Buffer.concat(outChunks).toString('utf8');
      try {
        resolve(JSON.parse(text) as T);
      } catch {
        const err = Buffer.concat(errChunks).toString('utf8').trim().slice(0, 500);
        reject(new Error(`the edit helper ended (${sig ?? `exit ${code}`}) without an answer${err ? `: ${err}` : ''}`));
      }
    });
    child.stdin.on('error', () => {
      /* it died first: reported on close */
    });
    child.stdin.end(JSON.stringify(request));
  });
}

/** A change (or a `view`) the gate decides on. */
export interface ProposedEdit {
  command: EditRequest['command'];
  /** Absolute path. */
  abs: string;
  /** What a person reviews: the unified diff of a change; for a `view`, {@link ruleSubject}. */
  review: string;
  /** The words approval rules are matched against (`str_replace_based_edit_tool <command> <abs>`). */
  ruleSubject: string;
  /**
   * Whether a component of `abs` below the workspace is a symlink (then `abs` names another file than it says: no rule
   * may approve it, and the review's first line names the file it resolves to).
   */
  viaSymlink: boolean;
}

/** The gate's answer: apply (a rule may have let it), ask a person (nothing is done), or refuse with an `is_error` text. */
export type EditGate = { apply: true; rule?: number } | { ask: string } | { refuse: string };

/** What an edit came to. */
export interface EditOutcome {
  /** What Claude is told; ends with {@link notes}, each on a line of its own. */
  text: string;
  /**
   * The session's notes appended to `text` (`[agent-jobs: ...]`: a memory kill, the git audit's
   * findings), in order, so a reader can show them apart from the file's text, which may hold
   * the same words (`BashSession.edit`; none while the edit waits for a person: they come with
   * the next result). Absent from `performEdit`'s own outcomes.
   */
  notes?: string[];
  isError: boolean;
  /** Whether a file was written. */
  applied: boolean;
  /** Set when the gate asked for a person: nothing was done. */
  needsApproval?: { reason: string; review: string; ruleSubject: string };
  approvedByRule?: number;
  /** Absolute path the edit named (absent when the path was refused before it was resolved). */
  abs?: string;
  /** SHA-256 of the review text (set when a change was proposed). */
  reviewSha256?: string;
}

/** The file operations of one edit, as the session's helper runs them. */
export interface EditIo {
  /** Whether `abs` stays inside the workspace once symlinks are resolved (checked by the worker first, for a clear error; the helper checks again). */
  staysInside(abs: string): boolean;
  /** Whether a component of `abs` below the workspace (the file itself included) is a symlink now. */
  viaSymlink(abs: string): boolean;
  read(abs: string): Promise<ReadReply>;
  /** Writes `real` (a read's `real`: no symlink on the way) following no symlink; `SWAPPED` when one is there now. */
  write(real: string, content: string, expectSha256: string | null): Promise<WriteReply>;
}

/**
 * One editor command, end to end: resolve the path (relative to `cwd`, inside `workspace`,
 * no `..`), ask the gate for a `view` before reading, read, plan, ask the gate for a change
 * with its diff, write only when it says apply. Errors of the command (missing file, no
 * unique match, ...) are answered without asking: nothing would be done.
 * @param ruleSubject the rule words for a command and path (src/contract `editRuleSubject`)
 * @param beforeWrite awaited once the gate said apply, just before the write (the workspace checkpoint): never for a
 *   `view`, an edit answered without writing, or one that waits for a person
 */
export async function performEdit(
  edit: EditRequest,
  where: { cwd: string; workspace: string; maxCharacters: number },
  io: EditIo,
  gate: (p: ProposedEdit) => EditGate,
  ruleSubject: (command: EditRequest['command'], abs: string) => string,
  beforeWrite?: () => Promise<void>,
): Promise<EditOutcome> {
  const resolved = resolveEditPath(edit.path, where.cwd, where.workspace);
  if ('error' in resolved) return { text: resolved.error, isError: true, applied: false };
  const abs = resolved.abs;
  if (!io.staysInside(abs))
    return { text: failureText('OUTSIDE', 'a symlink points out of it', abs, false), isError: true, applied: false, abs };
  const subject = ruleSubject(edit.command, abs);
  const linked = io.viaSymlink(abs);
  const decide = (review: string, viaSymlink = linked): EditGate =>
    gate({ command: edit.command, abs, review, ruleSubject: subject, viaSymlink });
  const notDone = (g: EditGate, review: string): EditOutcome | null => {
    if ('refuse' in g) return { text: g.refuse, isError: true, applied: false, abs, reviewSha256: sha256Hex(review) };
    if ('ask' in g)
      return {
        text: '',
        isError: false,
        applied: false,
        abs,
        reviewSha256: sha256Hex(review),
        needsApproval: { reason: g.ask, review, ruleSubject: subject },
      };
    return null;
  };
  let viewGate: EditGate | undefined;
  if (edit.command === 'view') {
    viewGate = decide(subject);
    const stop = notDone(viewGate, subject);
    if (stop) return stop;
  }
  const read = await io.read(abs);
  const plan = planEdit(edit, abs, read, where.maxCharacters);
  const byRule = (g: EditGate | undefined): { approvedByRule?: number } =>
    g && 'apply' in g && g.rule !== undefined ? { approvedByRule: g.rule } : {};
  if (plan.kind === 'result') return { text: plan.text, isError: plan.isError, applied: false, abs, ...byRule(viewGate) };
  const made = planDiff(abs, plan);
  if (made.text === '')
    return { text: `${plan.success} (The file already had this content: nothing changed.)`, isError: false, applied: false, abs };
  // The approval binds the file written: the review names it when a symlink leads elsewhere, so its hash changes with it.
  const real = 'real' in read && read.real !== undefined ? read.real : abs;
  const diff = real === abs ? made.text : `${throughSymlinkLine(abs, real)}\n${made.text}`;
  let g = decide(diff, linked || real !== abs);
  // Added lines a summary stands for were never seen: a person cannot approve them (a rule, or `auto`, may still apply them).
  if ('ask' in g && made.hidden.added > 0)
    g = {
      refuse: `Error: this change adds ${made.hidden.added} ${made.hidden.added === 1 ? 'line' : 'lines'} in one block, more than a diff shows a person (${MAX_DIFF_SIDE_LINES} lines or ${MAX_DIFF_SIDE_CHARS} characters): make it in smaller edits.`,
    };
  const stop = notDone(g, diff);
  if (stop) return stop;
  await beforeWrite?.();
  const wrote = await io.write(real, plan.after, plan.expectSha256);
  if (!wrote.ok)
    return { text: failureText(wrote.code, wrote.message, abs, true), isError: true, applied: false, abs, reviewSha256: sha256Hex(diff) };
  return { text: plan.success, isError: false, applied: true, abs, reviewSha256: sha256Hex(diff), ...byRule(g) };
}
