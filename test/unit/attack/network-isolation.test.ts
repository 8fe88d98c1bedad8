/**
 * Round 3, kind 2: with `start --network` the sandbox shared the host's
 * network namespace, and a background job reached the unauthenticated
 * Temporal frontend on loopback and sent the run's decision Update itself.
 * Held by src/session/network.ts: a namespace of its own, outbound through
 * slirp4netns (`--disable-host-loopback`), and nftables rules in the
 * namespace refusing every address of the host (and slirp's gateway) before
 * any command runs.
 *
 * What this proves, and what it cannot here: host listeners on 127.0.0.1, on
 * 0.0.0.0 through each of the host's own addresses, and through the gateway
 * 10.0.2.2 are all refused; the rules cannot be removed from inside; the
 * namespace has a default route through slirp4netns and names its DNS
 * forwarder. These machines have no internet, so a real outbound exchange is
 * only attempted (to a TEST-NET-3 address): it must not fail as "Network is
 * unreachable", which is what a namespace without a way out says.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { withHostNetworkLock } from './fixtures/host-network-lock';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** A TCP server on all of the host's addresses that records what it receives. */
async function hostServer(): Promise<{ port: number; received: () => string; close: () => Promise<void> }> {
  let got = '';
  const server = net.createServer((c) => c.on('data', (d) => (got += d.toString())));
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    received: () => got,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const hostV4 = (): string[] =>
  Object.values(os.networkInterfaces())
    .flat()
    .filter((a) => a && a.family === 'IPv4')
    .map((a) => a!.address);

test('with network: true a session reaches no listener of the host: loopback, the gateway, or any of its addresses', async () => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting where the network namespace applies)');
  const srv = await hostServer();
  try {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws, network: true });
    const targets = ['127.0.0.1', '10.0.2.2', 'localhost', ...hostV4()];
    expect(targets.length).toBeGreaterThan(3);
    for (const a of targets) {
      const r = await s.run(`timeout 5 bash -c 'echo from-sandbox-${a} > /dev/tcp/${a}/${srv.port}' && echo SENT`);
      expect(r.output).not.toContain('SENT');
    }
    // A background job (the original attack) fares no better than the command.
    await s.run(`(sleep 0.2; echo from-job > /dev/tcp/127.0.0.1/${srv.port}) >/dev/null 2>&1 &`);
    await new Promise((r) => setTimeout(r, 800));
    expect(srv.received()).toBe('');
    // The rules are the root's: the session user cannot flush them.
    const flush = await s.run('nft flush ruleset 2>&1; echo rc=$?');
    expect(flush.output).toMatch(/rc=[1-9]/);
    expect((await s.run(`timeout 5 bash -c 'echo again > /dev/tcp/127.0.0.1/${srv.port}' && echo SENT`)).output).not.toContain('SENT');
    expect(srv.received()).toBe('');
  } finally {
    await srv.close();
  }
});

test('with network: true outbound goes through the namespace: a default route via slirp4netns, its DNS forwarder, an attempt that is not "unreachable"', async () => {
  const ws = tempDir();
  const s = await startSession({ cwd: ws, workspace: ws, network: true });
  // The kernel's table, not `ip route`: iproute2 sizes each netlink reply with recvmsg(MSG_PEEK), which the
  // session's seccomp filter refuses (seccomp.ts: no process may peek at bash's control line).
  const r = await s.run('cat /proc/net/route; cat /etc/resolv.conf');
  expect(r.output).toMatch(/^tap0\t00000000\t0202000A\t/m); // default via 10.0.2.2 dev tap0
  expect(r.output).toMatch(/^nameserver 10\.0\.2\.3$/m);
  const out = await s.run("timeout 5 bash -c 'echo > /dev/tcp/203.0.113.5/80'; echo rc=$?");
  expect(out.output).not.toMatch(/Network is unreachable/);
  // Without network the same attempt has no way out at all.
  const closed = await startSession({ cwd: ws, workspace: ws });
  expect((await closed.run("timeout 5 bash -c 'echo > /dev/tcp/203.0.113.5/80'; echo rc=$?")).output).toMatch(/Network is unreachable/);
});

test('slirp4netns goes with the session', async () => {
  const ws = tempDir();
  const s = await startSession({ cwd: ws, workspace: ws, network: true });
  const pid = s.bashPid;
  const slirps = (): string[] =>
    fs
      .readdirSync('/proc')
      .filter((d: string) => /^\d+$/.test(d))
      .filter((d: string) => {
        try {
          // slirp4netns is given the namespace by path (network.ts startSlirp).
          return fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').includes(`/proc/${pid}/ns/net`);
        } catch {
          return false;
        }
      });
  expect(slirps().length).toBeGreaterThan(0);
  await closeSessions();
  for (let i = 0; i < 100 && slirps().length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(slirps()).toEqual([]);
});

test('a range the host makes its own after the session started (a local route, a public range outside the fixed ones) is refused to that session', async () => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting where the network namespace applies)');
  const srv = await hostServer();
  // Benchmarking space (RFC 2544): outside the fixed refused ranges, so only the routing tables can refuse it.
  const route = '198.18.7.0/24';
  try {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws, network: true });
    await withHostNetworkLock(async () => {
      execFileSync('ip', ['route', 'add', 'local', route, 'dev', 'lo']);
      try {
        // The attack is tried once the session's rules know the route (the product's monitor reacts in
        // milliseconds on a quiet machine, longer under load); what is asserted is that it is then refused.
        const ruleset = (): string =>
          execFileSync('nsenter', [`--net=/proc/${s.bashPid}/ns/net`, '--', 'nft', 'list', 'ruleset'], { encoding: 'utf8' });
        for (const deadline = Date.now() + 30_000; !ruleset().includes(route);) {
          if (Date.now() > deadline) throw new Error(`the session's nft sets did not take ${route} within 30 s`);
          await new Promise((r) => setTimeout(r, 50));
        }
        const r = await s.run(`timeout 5 bash -c 'echo late > /dev/tcp/198.18.7.200/${srv.port}' && echo SENT`);
        expect(r.output).not.toContain('SENT');
        await new Promise((r) => setTimeout(r, 300));
        expect(srv.received()).toBe('');
      } finally {
        execFileSync('ip', ['route', 'del', 'local', route, 'dev', 'lo']);
      }
    });
  } finally {
    await srv.close();
  }
});
