/**
 * Network for a sandbox that asked for it (`network: true`), without the
 * host's network namespace: bash gets a namespace of its own (bwrap
 * `--unshare-net`) whose only way out is slirp4netns, a user-mode TCP/IP
 * stack that makes each outbound connection from the host as an ordinary
 * socket. Refused inside the namespace, before slirp4netns is attached
 * (so before any command runs), by nftables rules the session user cannot
 * change (no capabilities): the host's loopback (slirp4netns
 * `--disable-host-loopback`, and its gateway 10.0.2.2), every address of the
 * host's own interfaces, and everything on the DNS forwarder 10.0.2.3 but
 * port 53. So a command reaches the internet, never the Temporal frontend,
 * the worker, the model server or another service of this host.
 * slirp4netns runs as root on the host, so it runs in its own sandbox
 * (`--enable-sandbox`: a mount namespace with nothing but what it needs,
 * capabilities dropped) under its own seccomp filter (`--enable-seccomp`).
 * Debian packages `slirp4netns` (1.2.0) and `nftables` (1.0.6), installed by
 * .ci/run and the Dockerfile. Root workers only (the intended setting).
 * Attack test: test/unit/attack/network-isolation.test.ts.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';
import { MINIMAL_ENV } from './identity';

/** The namespace's view of slirp4netns's defaults: gateway (the host), DNS forwarder. */
export const SLIRP_GATEWAY = '10.0.2.2';
export const SLIRP_DNS = '10.0.2.3';
/** How long slirp4netns may take to report ready, ms. */
const READY_TIMEOUT_MS = 5000;

/** Addresses of this host's interfaces, loopback included (the namespace has a loopback of its own, which `lo` keeps). */
function hostAddresses(): { v4: string[]; v6: string[] } {
  const v4 = new Set<string>();
  const v6 = new Set<string>();
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? []) (a.family === 'IPv4' ? v4 : v6).add(a.address.replace(/%.*$/, ''));
  return { v4: [...v4], v6: [...v6] };
}

/** The nftables ruleset loaded into the sandbox's namespace. */
export function namespaceRules(host = hostAddresses()): string {
  const v4 = [SLIRP_GATEWAY, ...host.v4.filter((a) => !a.startsWith('127.'))];
  const v6 = host.v6.filter((a) => a !== '::1');
  return [
    'table inet agent_jobs {',
    '  chain output {',
    '    type filter hook output priority 0; policy accept;',
    '    oifname "lo" accept',
    `    ip daddr { ${v4.join(', ')} } reject`,
    ...(v6.length > 0 ? [`    ip6 daddr { ${v6.join(', ')} } reject`] : []),
    `    ip daddr ${SLIRP_DNS} udp dport != 53 reject`,
    `    ip daddr ${SLIRP_DNS} tcp dport != 53 reject`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/**
 * Loads {@link namespaceRules} into the network namespace of `pid` and
 * attaches slirp4netns to it (tap0, 10.0.2.100/24, default route, MTU
 * 65520). Resolves with the slirp4netns process (kill it with the shell;
 * it also exits when the worker does, through its exit fd).
 * @throws Error when nft or slirp4netns is missing or fails
 */
export async function attachNetwork(pid: number): Promise<ChildProcess> {
  execFileSync('nsenter', [`--net=/proc/${pid}/ns/net`, '--', 'nft', '-f', '-'], {
    input: namespaceRules(),
    env: MINIMAL_ENV,
    stdio: ['pipe', 'ignore', 'pipe'],
    timeout: READY_TIMEOUT_MS,
  });
  const child = spawn(
    'slirp4netns',
    [
      '--configure',
      '--mtu=65520',
      '--disable-host-loopback',
      '--enable-sandbox',
      '--enable-seccomp',
      '--ready-fd=3',
      '--exit-fd=4',
      String(pid),
      'tap0',
    ],
    { env: MINIMAL_ENV, stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const ready = child.stdio[3] as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`slirp4netns not ready within ${READY_TIMEOUT_MS} ms: ${stderr.trim()}`)),
      READY_TIMEOUT_MS,
    );
    ready.once('data', () => (clearTimeout(timer), resolve()));
    child.once('error', (err) => (clearTimeout(timer), reject(err)));
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`slirp4netns exited (${code}): ${stderr.trim()}`))));
  });
  child.removeAllListeners('exit');
  child.on('error', () => undefined);
  child.unref();
  for (const s of [child.stderr, child.stdio[3], child.stdio[4]]) (s as unknown as { unref?: () => void } | null)?.unref?.();
  return child;
}
