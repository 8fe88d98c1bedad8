/**
 * The sandbox's edges, round 3, kind 6 (part): host unix sockets were reachable from a session
 * without --network (a path socket crosses network namespaces), and the private /tmp and
 * /dev/shm were memory without a size, outside every ulimit. Held by src/session/session.ts:
 * `/run` (and so `/var/run`) hidden unless the session shares the host's network anyway, and
 * `tmpfsBytes` on both tmpfs (sandbox.ts, bwrap `--size`).
 *
 * The attacks: connect to a listening unix socket under /run, by its path and through /var/run;
 * list /run for sockets; fill /tmp and /dev/shm past the size, from a command and a background job.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { SANDBOX_TMPFS_BYTES } from '../../../src/session/workspace';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** A unix socket server under /run, world-connectable, that records what it receives. */
async function runSocket(): Promise<{ file: string; received: () => string; close: () => Promise<void> }> {
  const dir = fs.mkdtempSync('/run/agent-jobs-attack-');
  fs.chmodSync(dir, 0o755);
  const file = path.join(dir, 'service.sock');
  let got = '';
  const server = net.createServer((c) => c.on('data', (d) => (got += d.toString())));
  await new Promise<void>((r) => server.listen(file, r));
  fs.chmodSync(file, 0o777);
  return {
    file,
    received: () => got,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('a session without --network reaches no host unix socket under /run or /var/run, from a command or a job', async () => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const srv = await runSocket();
  try {
    // The socket is reachable on the host as the session user would reach it: the hiding is what stops it.
    await new Promise<void>((resolve, reject) => net.connect(srv.file, resolve).on('error', reject).end('host-check'));
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    const py = (p: string): string =>
      `python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.send(b"from-sandbox"); print("SENT")' ${p}`;
    for (const p of [srv.file, srv.file.replace(/^\/run/, '/var/run')]) {
      const r = await s.run(`${py(p)} 2>&1`);
      expect(r.output).not.toContain('SENT');
    }
    await s.run(`(sleep 0.2; ${py(srv.file)}) >/dev/null 2>&1 &`);
    await new Promise((r) => setTimeout(r, 1_500));
    const listing = await s.run('find /run /var/run -type s 2>/dev/null | head; ls -A /run | wc -l');
    expect(listing.output.trim()).toBe('0');
    expect(srv.received()).toBe('host-check');
  } finally {
    await srv.close();
  }
});

test('the private /tmp and /dev/shm hold at most their size, from a command or a background job', async () => {
  const ws = tempDir();
  const s = await startSession({ cwd: ws, workspace: ws });
  const mib = SANDBOX_TMPFS_BYTES / 1024 ** 2;
  const sizes = await s.run('df -B1 --output=size /tmp /dev/shm | tail -n 2');
  expect(sizes.output.trim().split(/\s+/).map(Number)).toEqual([SANDBOX_TMPFS_BYTES, SANDBOX_TMPFS_BYTES]);
  for (const dir of ['/tmp', '/dev/shm']) {
    const r = await s.run(`dd if=/dev/zero of=${dir}/fill bs=1M count=${mib + 64} 2>&1; echo "exit $?"; rm -f ${dir}/fill`);
    expect(r.output).toMatch(/No space left on device/);
    expect(r.output).toMatch(/exit 1/);
  }
  // A job that keeps writing into both is bounded the same way.
  await s.run(`(cat /dev/zero > /tmp/a; cat /dev/zero > /dev/shm/b) >/dev/null 2>&1 &`);
  let used = '';
  for (let i = 0; i < 100 && !/^\d+\s+\d+$/.test(used); i++) {
    await new Promise((r) => setTimeout(r, 200));
    const u = await s.run('df -B1 --output=used /tmp /dev/shm | tail -n 2 | tr "\\n" " "');
    const [a, b] = u.output.trim().split(/\s+/).map(Number);
    if (a! >= SANDBOX_TMPFS_BYTES * 0.99 && b! >= SANDBOX_TMPFS_BYTES * 0.99) used = `${a} ${b}`;
  }
  expect(used).toMatch(/^\d+\s+\d+$/);
  for (const n of used.split(' ').map(Number)) expect(n).toBeLessThanOrEqual(SANDBOX_TMPFS_BYTES);
  await s.run('rm -f /tmp/a /dev/shm/b');
}, 120_000);

test('a worker whose TMPDIR is outside /tmp gives its sessions a TMPDIR they can use, sandbox or none', async () => {
  const other = fs.mkdtempSync('/var/tmp/aj-worker-tmp-');
  const saved = process.env.TMPDIR;
  try {
    // The worker's own temp directory: root's, 0700 (as a worker's private TMPDIR would be).
    fs.chmodSync(other, 0o700);
    process.env.TMPDIR = other;
    for (const sandbox of ['bwrap', 'none'] as const) {
      const ws = tempDir();
      fs.chmodSync(ws, 0o755);
      const s = await startSession({ cwd: ws, workspace: ws, sandbox });
      const r = await s.run('f=$(mktemp) && echo data > "$f" && cat "$f" && d=$(mktemp -d) && touch "$d/x" && echo "$TMPDIR ok"');
      expect([sandbox, r.exitCode, r.output]).toEqual([sandbox, 0, 'data\n/tmp ok\n']);
      // A background job too, and the starting environment an exact run gets.
      await s.run(`(mktemp > ${ws}/job 2>&1) &`);
      await new Promise((res) => setTimeout(res, 500));
      expect(fs.readFileSync(path.join(ws, 'job'), 'utf8')).toMatch(/^\/tmp\/tmp\.\w+\n$/);
      expect((await s.runExact(['mktemp'])).output).toMatch(/^\/tmp\/tmp\.\w+\n$/);
    }
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    fs.rmSync(other, { recursive: true, force: true });
  }
});
