/**
 * Attacks on the checkpoint store's root file work (src/checkpoint/confine.ts): a restore writes
 * and chowns the workspace as root while the session's jobs run. A job swaps a directory of the
 * workspace with a symlink, over and over, so that root's `read-tree -u` and `chown` follow it:
 * to a directory of root-only files outside the workspace (overwritten, or given away), or into
 * the checkpoint store itself (a hook planted there would run as root at the next `update-ref`).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { restoreCheckpoint, storeFor, takeCheckpoint } from '../../../src/checkpoint/store';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/**
 * Swaps the directory `d` with the symlink `l` (to TARGET) over and over (renameat2 RENAME_EXCHANGE); every 50 swaps
 * changes d's files again and puts back a symlink git removed, so that every restore has files to write.
 */
const DIR_FLIPPER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
target = sys.argv[1]
def dirty():
  if os.path.islink('d') or not os.path.isdir('d'): return
  for top, _, files in os.walk('d'):
    for f in files:
      try:
        with open(os.path.join(top, f), 'w') as h: h.write('changed by the job\\n')
      except OSError: pass
dirty()
os.symlink(target, 'l')
print('READY', flush=True)
i = 0
while True:
  libc.renameat2(-100, b'd', -100, b'l', 2)
  i += 1
  if i % 50 == 0:
    dirty()
    for name in ('l', 'd'):
      if not os.path.lexists(name):
        try: os.symlink(target, name)
        except OSError: pass
`;

const N = 60;

const asRoot = process.getuid?.() === 0 ? test.each : test.skip.each;

describe('a restore racing a job that swaps a directory for a symlink', () => {
  asRoot([
    ['outside', 0],
    ['outside', 4242],
    ['store', 0],
  ] as const)(
    'writes and chowns nothing through it (symlink to %s, workspace owner uid %i)',
    async (where, owner) => {
      const outside = fs.mkdtempSync('/var/tmp/aj-outside-');
      const marker = fs.mkdtempSync('/var/tmp/aj-marker-');
      try {
        fs.chmodSync(outside, 0o755);
        fs.chmodSync(marker, 0o1777);
        for (let i = 0; i < N; i++) fs.writeFileSync(path.join(outside, `f${i}`), 'ROOT-ORIGINAL\n', { mode: 0o600 });
        const ws = tempDir();
        const checkpoints = tempDir('aj-checkpoints-');
        // The checkpoint to restore: d/ holds N files and, for the store case, hooks named as git's.
        fs.mkdirSync(path.join(ws, 'd', 'hooks'), { recursive: true });
        for (let i = 0; i < N; i++) fs.writeFileSync(path.join(ws, 'd', `f${i}`), 'FROM-CHECKPOINT\n');
        for (const hook of ['reference-transaction', 'post-index-change'])
          fs.writeFileSync(path.join(ws, 'd', 'hooks', hook), `#!/bin/sh\nid >> ${marker}/ran\n`, { mode: 0o755 });
        fs.writeFileSync(path.join(ws, 'flip.py'), DIR_FLIPPER);
        // A workspace of a user, whom bash runs as: the restore chowns what it writes to that user.
        if (owner !== 0) execFileSync('chown', ['-R', `${owner}:${owner}`, ws]);
        const cp = await takeCheckpoint(checkpoints, ws, { maxBytes: 1e9 }, 'base');
        if (!('id' in cp)) throw new Error('no checkpoint');
        const store = await storeFor(checkpoints, ws);
        const target = where === 'outside' ? outside : store;

        const s = await startSession({ cwd: ws, workspace: ws });
        const started = await s.run(`python3 flip.py ${target} > flip.log 2>&1 & sleep 1; cat flip.log`);
        expect(started.output).toContain('READY');
        const deadline = Date.now() + 30_000;
        for (let k = 0; k < 40 && Date.now() < deadline; k++) {
          await restoreCheckpoint(cp.store, ws, cp.id).catch(() => undefined);
          await takeCheckpoint(checkpoints, ws, { maxBytes: 1e9 }, `after ${k}`).catch(() => undefined);
        }
        await s.close();

        // Nothing outside the workspace was written or given to anyone.
        for (let i = 0; i < N; i++) {
          const f = path.join(outside, `f${i}`);
          expect([fs.readFileSync(f, 'utf8'), fs.statSync(f).uid]).toEqual(['ROOT-ORIGINAL\n', 0]);
        }
        expect(fs.readdirSync(outside).sort()).toEqual(Array.from({ length: N }, (_, i) => `f${i}`).sort());
        // Nothing landed in the store, and no hook ran.
        expect(fs.existsSync(path.join(store, 'hooks', 'reference-transaction'))).toBe(false);
        expect(fs.existsSync(path.join(store, 'f0'))).toBe(false);
        execFileSync('git', ['--git-dir', store, 'update-ref', 'refs/probe', cp.id]);
        expect(fs.existsSync(path.join(marker, 'ran'))).toBe(false);
      } finally {
        fs.rmSync(outside, { recursive: true, force: true });
        fs.rmSync(marker, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
