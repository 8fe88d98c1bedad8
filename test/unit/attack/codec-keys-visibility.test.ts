/**
 * Attack: can a session's bash (or the editor's `view`) read the payload codec's keys?
 *
 * The default keys file (`<data dir>/codec-keys`, mode 0600 in a 0700 folder) lies in the data
 * dir, which every sandbox hides. But `AGENT_JOBS_CODEC_KEYS` may name a file or a directory
 * anywhere (`/etc/agent-jobs/codec-keys`, `/var/lib/...`); an operator who wrote it with `echo >`
 * leaves it 0644.
 *
 * Bypass found (fixed): the worker hid the data dir, workspace root, audit log and project folder
 * but not the `AGENT_JOBS_CODEC_KEYS` path, so `cat` of it from a session printed every key. The
 * worker's hidden paths now come from `sessionHiddenPaths` (src/settings.ts), which includes it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findBwrap } from '../../../src/session';
import { createKeysFile } from '../../../src/codec';
import { sessionHiddenPaths } from '../../../src/settings';
import { editRuleSubject, parseEditInput } from '../../../src/contract/text-editor';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const sandboxed = process.getuid?.() === 0 && findBwrap() !== null;
const maybe = sandboxed ? test : test.skip;

/** A keys file outside /tmp (the sandbox's private /tmp would hide one there anyway), world-readable as an operator might leave it. */
function keysFile(): { dir: string; file: string; key: string } {
  const dir = fs.mkdtempSync('/var/tmp/aj-codec-keys-');
  fs.chmodSync(dir, 0o755);
  const file = path.join(dir, 'codec-keys');
  createKeysFile(file);
  fs.chmodSync(file, 0o644);
  const key = fs.readFileSync(file, 'utf8').trim().split('\n').pop()!.split(' ')[1]!;
  return { dir, file, key };
}

maybe('a keys file named by AGENT_JOBS_CODEC_KEYS outside the data dir is hidden from bash (file and directory forms)', async () => {
  const { dir, file, key } = keysFile();
  try {
    const ws = fs.realpathSync(tempDir('aj-keys-ws-'));
    const dataDir = fs.realpathSync(tempDir('aj-keys-data-'));
    // What the worker hid before: without the keys path, the session reads the key.
    const before = await startSession({
      cwd: ws,
      workspace: ws,
      hidePaths: sessionHiddenPaths({ AGENT_JOBS_DATA_DIR: dataDir }),
    });
    expect((await before.run(`cat ${file}`)).output).toContain(key);
    for (const env of [
      { AGENT_JOBS_DATA_DIR: dataDir, AGENT_JOBS_CODEC_KEYS: file },
      { AGENT_JOBS_DATA_DIR: dataDir, AGENT_JOBS_CODEC_KEYS: dir },
    ]) {
      const s = await startSession({ cwd: ws, workspace: ws, hidePaths: sessionHiddenPaths(env) });
      const out = (await s.run(`cat ${file}; ls -la ${dir}`)).output;
      expect({ env, leaked: out.includes(key) }).toEqual({ env, leaked: false });
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

maybe(
  'the default keys file in the data dir is hidden from bash and from an editor view (also through a symlink in the workspace)',
  async () => {
    const ws = fs.realpathSync(tempDir('aj-keys-ws-'));
    // A data dir outside /tmp, as a worker's is.
    const dataDir = fs.mkdtempSync('/var/tmp/aj-keys-data-');
    try {
      const file = path.join(dataDir, 'codec-keys');
      createKeysFile(file);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const key = fs.readFileSync(file, 'utf8').trim().split('\n').pop()!.split(' ')[1]!;
      fs.chmodSync(file, 0o644);
      fs.chmodSync(dataDir, 0o755);
      const s = await startSession({ cwd: ws, workspace: ws, hidePaths: sessionHiddenPaths({ AGENT_JOBS_DATA_DIR: dataDir }) });
      expect((await s.run(`cat ${file}; ln -s ${file} k`)).output).not.toContain(key);
      for (const p of ['k', file]) {
        const parsed = parseEditInput({ command: 'view', path: p });
        if (!parsed.ok) throw new Error(parsed.text);
        const r = await s.edit(parsed.edit, () => ({ apply: true }), { maxCharacters: 20_000, ruleSubject: editRuleSubject });
        expect(r.isError).toBe(true);
        expect(r.text).not.toContain(key);
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  },
);
