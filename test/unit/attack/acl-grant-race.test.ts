/**
 * Attacks on the workspace's ACL grant walked by descriptor (src/session/acl-grant.ts): a job of
 * the first session on a root-owned workspace swaps, over and over, a nested directory and a
 * single file with symlinks to root-only files outside, while second sessions start (each grants
 * the workspace again); and a hard link to a root-only file inside the workspace (which
 * fs.protected_hardlinks=1 keeps the session user from making, but not every host sets it).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { grantTree } from '../../../src/session/acl-grant';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const asRoot = process.getuid?.() === 0 ? test : test.skip;

/** Entries under `dir` (recursively) that carry an ACL entry for a named user. */
function granted(dir: string): string[] {
  return execFileSync('getfacl', ['-R', '-p', dir], { encoding: 'utf8' })
    .split('\n\n')
    .filter((block) => /^user:[^:]+:/m.test(block))
    .map((block) => block.split('\n')[0]!);
}

/** Swaps d/e/x (a directory) with d/e/l (a symlink to TARGET) and file g with h (a symlink to TARGET/f1), over and over. */
const FLIPPER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
target = sys.argv[1]
os.makedirs('d/e/x', exist_ok=True)
for i in range(50): open(f'd/e/x/f{i}', 'w').close()
os.symlink(target, 'd/e/l')
open('g', 'w').close()
os.symlink(target + '/f1', 'h')
print('READY', flush=True)
while True:
  libc.renameat2(-100, b'd/e/x', -100, b'd/e/l', 2)
  libc.renameat2(-100, b'g', -100, b'h', 2)
`;

describe('the ACL grant walked by descriptor', () => {
  asRoot(
    'a nested directory and a file swapped for symlinks while sessions start get the session user nothing outside',
    async () => {
      const target = fs.mkdtempSync('/var/tmp/aj-root-only-');
      try {
        fs.chmodSync(target, 0o755);
        for (let i = 0; i < 100; i++) fs.writeFileSync(path.join(target, `f${i}`), `ROOT-ONLY-${i}\n`, { mode: 0o600 });
        const ws = tempDir();
        fs.writeFileSync(path.join(ws, 'flip.py'), FLIPPER);
        const first = await startSession({ cwd: ws, workspace: ws });
        // Polled for the flipper's READY (every 50 ms, 30 s at most), not a fixed wait: it swaps from then on.
        const started = await first.run(
          `python3 flip.py ${target} > flip.log 2>&1 & for i in $(seq 600); do grep -q READY flip.log && break; sleep 0.05; done; cat flip.log`,
          { timeoutMs: 40_000 },
        );
        expect(started.output).toContain('READY');
        let outside: string[] = [];
        for (let k = 0; k < 15 && outside.length === 0; k++) {
          const second = await startSession({ cwd: ws, workspace: ws });
          await second.close();
          outside = granted(target);
        }
        const read = await first.run(`id -un; cat ${target}/f* h d/e/l/* 2>/dev/null | head -3`);
        expect(read.output).toMatch(/^agent-jobs\n/);
        expect(outside.slice(0, 3)).toEqual([]);
        expect(read.output).not.toContain('ROOT-ONLY');
        // The workspace itself was granted (the walk went through it); read once the flipper has stopped, as
        // getfacl -R walks by path and fails on a name the flipper just swapped away.
        await first.run('kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; true');
        expect(granted(ws)).toEqual(expect.arrayContaining([`# file: ${ws}`, `# file: ${ws}/d/e`]));
      } finally {
        fs.rmSync(target, { recursive: true, force: true });
      }
    },
    120_000,
  );

  asRoot('a hard link to a root-only file is not granted (its other name is outside)', async () => {
    const target = fs.mkdtempSync('/var/tmp/aj-root-only-');
    try {
      const secret = path.join(target, 'key');
      fs.writeFileSync(secret, 'ROOT-ONLY\n', { mode: 0o600 });
      const ws = tempDir();
      fs.mkdirSync(path.join(ws, 'sub'));
      fs.writeFileSync(path.join(ws, 'sub', 'own'), 'x\n');
      fs.linkSync(secret, path.join(ws, 'sub', 'linked'));
      await grantTree(ws, { dirs: 'u:65534:rwX,d:u:65534:rwX', files: 'u:65534:rwX' }, 30_000);
      expect(granted(target)).toEqual([]);
      expect(granted(ws).sort()).toEqual([`# file: ${ws}`, `# file: ${ws}/sub`, `# file: ${ws}/sub/own`].sort());
    } finally {
      fs.rmSync(target, { recursive: true, force: true });
    }
  });

  asRoot(
    'a file without an execute bit gets none from a later grant; the session user can still write it; an executable keeps it',
    async () => {
      const ws = tempDir();
      // A workspace as a person's checkout is: its group and others may read and enter it.
      fs.chmodSync(ws, 0o775);
      const spec = { dirs: 'u:65534:rwX,d:u:65534:rwX', files: 'u:65534:rwX' };
      await grantTree(ws, spec, 30_000);
      // Created after the grant (a rewind's restored file, a person's new one): it inherits the default entry u:65534:rwx.
      fs.writeFileSync(path.join(ws, 'plain.txt'), 'x\n', { mode: 0o664 });
      fs.writeFileSync(path.join(ws, 'private'), 'x\n', { mode: 0o600 });
      fs.writeFileSync(path.join(ws, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
      fs.chmodSync(path.join(ws, 'run.sh'), 0o755);
      await grantTree(ws, spec, 30_000);
      const acl = (name: string): string => execFileSync('getfacl', ['-p', path.join(ws, name)], { encoding: 'utf8' });
      const mode = (name: string): string => execFileSync('stat', ['-c', '%A', path.join(ws, name)], { encoding: 'utf8' }).trim();
      expect(mode('plain.txt')).toBe('-rw-rw-r--');
      expect(acl('plain.txt')).toMatch(/^mask::rw-$/m);
      expect(acl('plain.txt')).toMatch(/^user:nobody:rw-$/m);
      expect(mode('private')).toBe('-rw-rw----');
      expect(acl('private')).toMatch(/^user:nobody:rw-$/m);
      expect(mode('run.sh')).toBe('-rwxrwxr-x');
      expect(acl('run.sh')).toMatch(/^user:nobody:rwx$/m);
    },
  );
});
