/**
 * Adversary round 7: attacks that worked on the code they were written against. Each test fails
 * on that code; they are skipped (OPEN) until a fix lands.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { diffText } from '../../../src/cli/commands/rewind';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const OPEN = true;
const t = OPEN ? test.skip : test;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** Listens on NETLINK_KOBJECT_UEVENT (protocol 15), multicast group 1, and prints what the kernel sends. */
const UEVENT = `
import socket
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15)
s.bind((0, 1))
s.settimeout(8)
print("LISTENING", flush=True)
try:
    while True:
        print(s.recv(65536).replace(b"\\0", b" ").decode(errors="replace"), flush=True)
except Exception as e:
    print("END", e, flush=True)
`;

describe('adversary round 7', () => {
  // AF_NETLINK is allowed because it "talks to the kernel about that same namespace"
  // (seccomp.ts); NETLINK_KOBJECT_UEVENT does not: the kernel broadcasts the host's device
  // events (hotplug, module loads, every change) to each network namespace its initial user
  // namespace owns, the session's included.
  t(
    "a session's netlink socket receives the host's kernel uevents",
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const ws = tempDir();
      fs.writeFileSync(path.join(ws, 'ue.py'), UEVENT);
      const s = await startSession({ cwd: ws, workspace: ws, network: false });
      await s.run('(python3 ue.py > ue.txt 2>&1) >/dev/null 2>&1 &');
      const out = path.join(ws, 'ue.txt');
      const deadline = Date.now() + 5_000;
      while (Date.now() < deadline && !(fs.existsSync(out) && fs.readFileSync(out, 'utf8').includes('LISTENING'))) {
        await new Promise((r) => setTimeout(r, 100));
      }
      // A device event on the host, outside the session.
      fs.writeFileSync('/sys/devices/virtual/mem/null/uevent', 'change');
      await new Promise((r) => setTimeout(r, 1500));
      expect(fs.readFileSync(out, 'utf8')).not.toContain('ACTION=change');
      await s.close();
    },
    60_000,
  );

  // The rewind diff escapes a real ESC (or U+202E) as the same text a file that holds the
  // literal characters backslash, x, 1, b shows: a reviewer cannot tell bytes that act on a
  // terminal or hide code (Trojan Source) from an ordinary escape in a string literal.
  t('the rewind diff tells real control characters from their escapes written as text', () => {
    expect(diffText('+a\x1b[31mb\n')).not.toBe(diffText('+a\\x1b[31mb\n'));
    expect(diffText('+a\u202eb\n')).not.toBe(diffText('+a\\u202eb\n'));
  });
});
