/**
 * Attacks on the text editor's workspace boundary (src/session/edit.ts, BashSession.edit), on a
 * real session: real bash, real sandbox, real helper. A background bash job (left by an earlier,
 * human-approved command) races the editor's checks; an untrusted repository brings symlinks,
 * FIFOs and odd names. What must hold: an edit reads and writes only files inside the workspace,
 * and nothing it writes lands outside it.
 *
 * Bypass found (fixed): `view` of `d/os-release` while a background job flipped the directory `d`
 * between itself and a symlink to /usr/lib showed /usr/lib/os-release (about 1 in 20 views): the
 * helper opened by name after its realpath check. It now checks the opened descriptor's own path
 * (/proc/self/fd) and lists and writes through a descriptor of the checked directory.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findBwrap } from '../../../src/session';
import type { EditGate, ProposedEdit } from '../../../src/session';
import { editRuleSubject, parseEditInput, type EditRequest } from '../../../src/contract/text-editor';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const sandboxed = process.getuid?.() === 0 && findBwrap() !== null;
const maybe = sandboxed ? test : test.skip;

function req(input: Record<string, unknown>): EditRequest {
  const parsed = parseEditInput(input);
  if (!parsed.ok) throw new Error(parsed.text);
  return parsed.edit;
}

async function setup(): Promise<{
  ws: string;
  edit: (
    input: Record<string, unknown>,
    gate?: (p: ProposedEdit) => EditGate,
  ) => ReturnType<import('../../../src/session').BashSession['edit']>;
  run: (c: string) => Promise<string>;
}> {
  const ws = fs.realpathSync(tempDir('aj-edit-attack-'));
  const s = await startSession({ cwd: ws, workspace: ws });
  return {
    ws,
    edit: (input, gate = () => ({ apply: true })) => s.edit(req(input), gate, { maxCharacters: 20_000, ruleSubject: editRuleSubject }),
    run: async (c) => (await s.run(c)).output,
  };
}

/**
 * A background job that flips `name` between a real directory and a symlink to `out`, by renames
 * (perl: about 10^5 flips a second; the helper's realpath returns the directory's own path, so the
 * flip must be of a component of that resolved path).
 */
const FLIP_DIR = (name: string, out: string): string =>
  `mkdir -p ${name} && ln -sfn ${out} ${name}.l && (perl -e 'for(;;){rename("${name}","${name}.d");rename("${name}.l","${name}");rename("${name}","${name}.l");rename("${name}.d","${name}")}' >/dev/null 2>&1 &)`;

/** A file outside the workspace that the helper's sandbox still shows (not a hidden path), read by name. */
const OUTSIDE_DIR = '/usr/lib';
const OUTSIDE_NAME = 'os-release';
const outsideText = fs.existsSync(path.join(OUTSIDE_DIR, OUTSIDE_NAME))
  ? fs.readFileSync(path.join(OUTSIDE_DIR, OUTSIDE_NAME), 'utf8')
  : '';

maybe(
  'view: a directory component flipped to a symlink out (a background job races the realpath check) never shows a file outside the workspace',
  async () => {
    const { edit, run } = await setup();
    await run(`mkdir d && printf 'inside\\n' > d/${OUTSIDE_NAME} && ${FLIP_DIR('d', OUTSIDE_DIR)}`);
    const until = Date.now() + 15_000;
    let leaked = 0;
    let attempts = 0;
    const marker = outsideText.split('\n')[0]!;
    while (Date.now() < until && leaked === 0) {
      attempts++;
      const r = await edit({ command: 'view', path: `d/${OUTSIDE_NAME}` });
      if (marker !== '' && r.text.includes(marker)) leaked++;
    }
    expect({ leaked, attempts }).toEqual({ leaked: 0, attempts });
  },
);

maybe(
  'write: a directory component flipped to a symlink out never lands a file outside the workspace (a host dir the session user could write)',
  async () => {
    const { ws, edit, run } = await setup();
    // Outside the workspace, not a hidden path, writable by everyone on the host: only the sandbox keeps the edit out.
    const out = fs.mkdtempSync('/var/tmp/aj-edit-out-');
    fs.chmodSync(out, 0o777);
    try {
      await run(FLIP_DIR('d', out));
      const until = Date.now() + 12_000;
      let n = 0;
      while (Date.now() < until) {
        n++;
        await edit({ command: 'create', path: `d/f${n}.txt`, file_text: 'x\n' });
      }
      expect(fs.readdirSync(out)).toEqual([]);
      expect(fs.existsSync(ws)).toBe(true);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  },
);

maybe('a symlink, a FIFO or a device at the path: refused (no hang), nothing outside read', async () => {
  const { ws, edit, run } = await setup();
  await run(
    'mkfifo fifo; ln -s /usr/lib/os-release out; ln -s /dev/zero zero; ln -s /proc/self/root/usr/lib/os-release proc; ln -s /proc/self/fd/0 stdin',
  );
  const fifo = await edit({ command: 'view', path: 'fifo' });
  expect(fifo.isError).toBe(true);
  for (const p of [
    'out',
    'zero',
    'proc',
    'stdin',
    `${ws}/../${path.basename(ws)}/out`,
    '/usr/lib/os-release',
    `/proc/self/root${ws}/out`,
  ]) {
    const r = await edit({ command: 'view', path: p });
    expect({ p, isError: r.isError }).toEqual({ p, isError: true });
    expect(r.text).not.toContain('Debian');
  }
  // Writing through them: refused, or the link itself replaced; never the target written.
  for (const p of ['fifo', 'zero', 'stdin']) {
    const r = await edit({ command: 'create', path: p, file_text: 'pwned\n' });
    expect({ p, applied: r.applied && fs.lstatSync(path.join(ws, p)).isSymbolicLink() }).toEqual({ p, applied: false });
  }
  expect(fs.readFileSync('/usr/lib/os-release', 'utf8')).toBe(outsideText);
});

maybe('a hard link to a file outside the workspace cannot be made from the session (EXDEV), so the editor cannot reach one', async () => {
  const { edit, run } = await setup();
  const out = await run('ln /usr/lib/os-release hard 2>&1; echo rc=$?');
  expect(out).toMatch(/rc=[1-9]/);
  expect((await edit({ command: 'view', path: 'hard' })).text).toBe('Error: File not found');
});

test('NUL bytes, very long paths and unicode lookalikes of "..": refused or kept inside, never outside', async () => {
  const { ws, edit } = await setup();
  const nul = parseEditInput({ command: 'view', path: 'a\0/../../etc/passwd' });
  if (nul.ok) {
    const r = await edit({ command: 'view', path: 'a\0/../../etc/passwd' });
    expect(r.isError).toBe(true);
  }
  const long = await edit({ command: 'create', path: `${'a'.repeat(300)}/${'b'.repeat(5000)}`, file_text: 'x' });
  expect(long.applied).toBe(false);
  // U+2024 ONE DOT LEADER and U+FF0E FULLWIDTH FULL STOP are ordinary name characters: the file stays inside.
  for (const dots of ['\u2024\u2024', '\uff0e\uff0e', '.\u200b.']) {
    const r = await edit({ command: 'create', path: `${dots}/x.txt`, file_text: 'x\n' });
    expect(r.applied).toBe(true);
    expect(fs.existsSync(path.join(ws, dots, 'x.txt'))).toBe(true);
  }
});
