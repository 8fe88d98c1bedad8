/**
 * What the attack tests on the kernel keyring of a workspace's owner share (rounds 8 and 22): a
 * process of the owner on the host, outside any session, that keeps a secret in its user keyring
 * (./fixtures/user-keyring.py) while a session of that owner's workspace looks for it.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../session/helpers';

/**
 * Runs `use` while a process of a new owner (a uid from 47,000 to 47,999, no groups) keeps `secret`
 * under `description` in its user keyring (for 30 s at most): `ws` is a new workspace that owner
 * owns, holding the fixture as `keys.py` (`python3 keys.py read <description>` looks the key up).
 * Throws (a failed expectation) when the process could not add the key; kills it when `use` ends.
 */
export async function withOwnersKey(description: string, secret: string, use: (ws: string, owner: number) => Promise<void>): Promise<void> {
  const owner = 47_000 + Math.floor(Math.random() * 1000);
  const ws = tempDir();
  const script = path.join(ws, 'keys.py');
  fs.copyFileSync(path.join(__dirname, 'fixtures', 'user-keyring.py'), script);
  fs.chownSync(ws, owner, owner);
  fs.chownSync(script, owner, owner);
  const args = [
    '--reuid',
    String(owner),
    '--regid',
    String(owner),
    '--clear-groups',
    '/usr/bin/python3',
    script,
    'add',
    description,
    secret,
    '30',
  ];
  const host = spawn('setpriv', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const added = await new Promise<string>((resolve) => host.stdout.once('data', (d) => resolve(String(d))));
    expect(added).toContain('added');
    await use(ws, owner);
  } finally {
    host.kill();
  }
}
