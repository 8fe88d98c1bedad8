/**
 * Network for a sandbox that asked for it (`network: true`), without the
 * host's network namespace: bash gets a namespace of its own (bwrap
 * `--unshare-net`) whose only way out is slirp4netns, a user-mode TCP/IP
 * stack that makes each outbound connection from the host as an ordinary
 * socket. Refused inside the namespace, before slirp4netns is attached
 * (so before any command runs), by nftables rules the session user cannot
 * change (no capabilities): the host's loopback (slirp4netns
 * `--disable-host-loopback`, and its gateway 10.0.2.2), every range the
 * host's routing tables deliver to the host itself (whole prefixes, from
 * the kernel: interfaces that are down count, and local routes no interface
 * holds), kept current while the session lives ({@link attachNetwork}), the
 * special-purpose ranges where a host's own and its neighbours' services
 * live ({@link REFUSED_RANGES}: private, CGNAT, link-local, multicast, ULA),
 * and everything on the DNS forwarder 10.0.2.3 but port 53. So a command
 * reaches the internet, never the Temporal frontend, the worker, the model
 * server or another service of this host.
 * slirp4netns runs as root on the host, so it runs in its own sandbox
 * (`--enable-sandbox`: a mount namespace with nothing but what it needs,
 * capabilities dropped) under its own seccomp filter (`--enable-seccomp`).
 * Debian packages `slirp4netns` (1.2.0), `nftables` (1.0.6) and `iproute2` (6.1.0), installed by
 * .ci/run and the Dockerfile. Root workers only (the intended setting).
 * Attack tests: test/unit/attack/network-isolation.test.ts,
 * test/unit/attack/adversary-round3-sandbox.test.ts (kind 2).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { MINIMAL_ENV } from './identity';

/** The namespace's view of slirp4netns's defaults: gateway (the host), DNS forwarder. */
export const SLIRP_GATEWAY = '10.0.2.2';
export const SLIRP_DNS = '10.0.2.3';
/** How long slirp4netns may take to report ready, ms. */
const READY_TIMEOUT_MS = 5000;

/**
 * Ranges refused whatever the host's routing tables say, as `a.b.c.d/n` and
 * `x::/n`: where this host's own services and its neighbours' live, so a
 * range the host adds later inside them (a Docker network, a VPN, a cloud
 * metadata address) is refused from the start. RFC 6890 special-purpose
 * blocks: this network, private-use (RFC 1918), shared address space
 * (CGNAT, RFC 6598), loopback, link-local (169.254.169.254 is the cloud
 * metadata service), multicast (looped back to the host's own listeners,
 * mDNS) and the reserved block with the limited broadcast; in IPv6 the
 * unspecified and loopback addresses, IPv4-mapped addresses, unique local
 * (RFC 4193), link-local and multicast.
 */
export const REFUSED_RANGES: { readonly v4: readonly string[]; readonly v6: readonly string[] } = {
  v4: [
    '0.0.0.0/8',
    '10.0.0.0/8',
    '100.64.0.0/10',
    '127.0.0.0/8',
    '169.254.0.0/16',
    '172.16.0.0/12',
    '192.168.0.0/16',
    '224.0.0.0/4',
    '240.0.0.0/4',
  ],
  v6: ['::/127', '::ffff:0:0/96', 'fc00::/7', 'fe80::/10', 'ff00::/8'],
};

/** The host's own ranges, as `address/prefix`: every route of type local or broadcast (IPv4), local or anycast (IPv6). */
export interface HostRanges {
  v4: string[];
  v6: string[];
}

/**
 * Ranges the kernel delivers to this host itself, from its routing tables
 * (all of them, the `local` table included): an interface's addresses
 * whether the interface is up or down, with or without carrier, and local
 * routes no interface holds (`ip route add local 198.51.100.0/24 dev lo`,
 * "AnyIP"), each with its whole prefix. `os.networkInterfaces()` lists only
 * interfaces that are up, and addresses, not routes. IPv4 from
 * /proc/net/fib_trie (a leaf `|-- A` followed by `/N <scope> LOCAL` lines),
 * IPv6 from /proc/net/ipv6_route (flags RTF_LOCAL 0x80000000 or RTF_ANYCAST
 * 0x00100000); both are the worker's network namespace, the host's.
 * Missing files give empty lists.
 */
export function hostRanges(fibTrie = readOr('/proc/net/fib_trie'), ipv6Route = readOr('/proc/net/ipv6_route')): HostRanges {
  const v4 = new Set<string>();
  let leaf: string | undefined;
  for (const line of fibTrie.split('\n')) {
    const l = /^\s*\|-- (\d+\.\d+\.\d+\.\d+)\s*$/.exec(line);
    if (l) {
      leaf = l[1];
      continue;
    }
    const r = /^\s*\/(\d+) \S+ (LOCAL|BROADCAST)\b/.exec(line);
    if (r && leaf) v4.add(`${leaf}/${r[1]}`);
    else if (!/^\s*\//.test(line)) leaf = undefined;
  }
  const v6 = new Set<string>();
  for (const line of ipv6Route.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || !/^[0-9a-f]{32}$/.test(f[0]!)) continue;
    if ((parseInt(f[8]!, 16) & 0x80100000) === 0) continue;
    const addr = f[0]!.match(/.{4}/g)!.join(':');
    v6.add(`${addr}/${parseInt(f[1]!, 16)}`);
  }
  return { v4: [...v4], v6: [...v6] };
}

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** `range` (`address/prefix`) as [first, last] numbers of its family (32 or 128 bits). */
function interval(range: string, bits: 32 | 128): [bigint, bigint] {
  const [addr, len] = range.split('/') as [string, string | undefined];
  let n = 0n;
  if (bits === 32) for (const part of addr.split('.')) n = (n << 8n) | BigInt(Number(part));
  else {
    const [head, tail] = addr.includes('::') ? addr.split('::') : [addr, undefined];
    const h = head ? head.split(':') : [];
    const t = tail ? tail.split(':') : [];
    const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
    for (const g of groups) n = (n << 16n) | BigInt(parseInt(g || '0', 16));
  }
  const host = BigInt(bits - (len === undefined ? bits : Number(len)));
  const first = (n >> host) << host;
  return [first, first | ((1n << host) - 1n)];
}

/**
 * The ranges of one family without those inside another (nft rejects
 * overlapping elements of an interval set), sorted, each once.
 */
export function disjointRanges(ranges: readonly string[], bits: 32 | 128): string[] {
  const all = [...new Set(ranges)]
    .map((r) => ({ r, i: interval(r, bits) }))
    .sort((a, b) => (a.i[0] < b.i[0] ? -1 : a.i[0] > b.i[0] ? 1 : b.i[1] > a.i[1] ? 1 : -1));
  const out: string[] = [];
  let end = -1n;
  for (const { r, i } of all) {
    if (i[1] <= end) continue;
    out.push(r);
    end = i[1];
  }
  return out;
}

/** The refused sets' elements: {@link REFUSED_RANGES}, the host's own ranges, and slirp4netns's gateway. */
function refusedElements(host: HostRanges): { v4: string[]; v6: string[] } {
  return {
    v4: disjointRanges([...REFUSED_RANGES.v4, ...host.v4, SLIRP_GATEWAY], 32),
    v6: disjointRanges([...REFUSED_RANGES.v6, '::1/128', ...host.v6], 128),
  };
}

/**
 * The nftables ruleset loaded into the sandbox's namespace: its own
 * loopback, then slirp4netns's DNS forwarder on port 53, accepted; every
 * other destination in the sets `host4`/`host6` ({@link refusedElements})
 * refused. The sets are updated in place when the host's ranges change
 * ({@link setUpdate}).
 */
export function namespaceRules(host: HostRanges = hostRanges()): string {
  const e = refusedElements(host);
  return [
    'table inet agent_jobs {',
    `  set host4 { type ipv4_addr; flags interval; elements = { ${e.v4.join(', ')} } }`,
    `  set host6 { type ipv6_addr; flags interval; elements = { ${e.v6.join(', ')} } }`,
    '  chain output {',
    '    type filter hook output priority 0; policy accept;',
    '    oifname "lo" accept',
    `    ip daddr ${SLIRP_DNS} udp dport 53 accept`,
    `    ip daddr ${SLIRP_DNS} tcp dport 53 accept`,
    '    ip daddr @host4 reject',
    '    ip6 daddr @host6 reject',
    '  }',
    '}',
    '',
  ].join('\n');
}

/** One nft transaction that replaces the elements of both sets with those for `host` (atomic: no moment without them). */
export function setUpdate(host: HostRanges): string {
  const e = refusedElements(host);
  return [
    'flush set inet agent_jobs host4',
    'flush set inet agent_jobs host6',
    `add element inet agent_jobs host4 { ${e.v4.join(', ')} }`,
    `add element inet agent_jobs host6 { ${e.v6.join(', ')} }`,
    '',
  ].join('\n');
}

/**
 * Loads {@link namespaceRules} into the network namespace of `pid` and
 * attaches slirp4netns to it (tap0, 10.0.2.100/24, default route, MTU
 * 65520). Resolves with the slirp4netns process (kill it with the shell;
 * it also exits when the worker does, through its exit fd).
 *
 * The host's ranges can change while the session lives (an address added,
 * an interface brought up, a local route): an `ip monitor route` started
 * before the rules are read reports every change of the host's routing
 * tables, and each one re-reads {@link hostRanges} and replaces the sets'
 * elements in one nft transaction, milliseconds after the change. Should
 * that fail, slirp4netns is killed: the namespace is left with no way out
 * rather than with stale rules. Ranges inside {@link REFUSED_RANGES} (where
 * a host adds them in practice: Docker, VPNs) are refused before any change.
 * @throws Error when nft or slirp4netns is missing or fails
 */
export async function attachNetwork(pid: number): Promise<ChildProcess> {
  const monitor = await startRouteMonitor();
  const loaded = hostRanges();
  let child: ChildProcess;
  try {
    execFileSync('nsenter', [`--net=/proc/${pid}/ns/net`, '--', 'nft', '-f', '-'], {
      input: namespaceRules(loaded),
      env: MINIMAL_ENV,
      stdio: ['pipe', 'ignore', 'pipe'],
      timeout: READY_TIMEOUT_MS,
    });
    child = await startSlirp(pid);
  } catch (err) {
    monitor.kill('SIGKILL');
    throw err;
  }
  child.removeAllListeners('exit');
  child.on('error', () => undefined);
  child.once('exit', () => monitor.kill('SIGKILL'));
  keepRulesCurrent(pid, monitor, child, loaded);
  monitor.unref();
  (monitor.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  child.unref();
  for (const s of [child.stderr, child.stdio[3], child.stdio[4]]) (s as unknown as { unref?: () => void } | null)?.unref?.();
  return child;
}

/**
 * `ip -o monitor route`, started (one line per change of the host's routing tables).
 * @throws Error when iproute2 is missing: the start fails here rather than lose the network at the first change
 */
async function startRouteMonitor(): Promise<ChildProcess> {
  const monitor = spawn('ip', ['-o', 'monitor', 'route'], { env: MINIMAL_ENV, stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    monitor.once('spawn', resolve);
    monitor.once('error', (err) => reject(new Error(`ip monitor route (iproute2): ${err.message}`)));
  });
  monitor.on('error', () => undefined);
  return monitor;
}

/**
 * slirp4netns attached to the network namespace of `pid` (tap0, MTU 65520, no host loopback, in
 * its own sandbox and seccomp filter), once it reports ready on fd 3; it exits when fd 4 closes.
 * @throws Error when it is missing, exits, or is not ready within {@link READY_TIMEOUT_MS}
 */
async function startSlirp(pid: number): Promise<ChildProcess> {
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
      // By path, so it joins the network namespace only: given a pid it would also join that
      // process's user namespace (bash's own as root, userns.ts), where it has no right to the
      // network namespace, which is the host user namespace's.
      '--netns-type=path',
      `/proc/${pid}/ns/net`,
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
  return child;
}

/**
 * Keeps the namespace's refused sets equal to the host's ranges: each line of `monitor` re-reads
 * {@link hostRanges} and, when they changed from `loaded`, replaces the sets' elements in one nft
 * transaction, one at a time (again when a change came meanwhile). A failed update kills
 * slirp4netns (`child`), and so does the monitor's exit: no way out rather than stale rules.
 */
function keepRulesCurrent(pid: number, monitor: ChildProcess, child: ChildProcess, loaded: HostRanges): void {
  let running = false;
  let again = false;
  const refresh = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    const now = hostRanges();
    if (JSON.stringify(now) === JSON.stringify(loaded)) {
      running = false;
      return;
    }
    const nft = execFile(
      'nsenter',
      [`--net=/proc/${pid}/ns/net`, '--', 'nft', '-f', '-'],
      { env: MINIMAL_ENV, timeout: READY_TIMEOUT_MS },
      (err) => {
        running = false;
        if (err) {
          child.kill('SIGKILL');
          return;
        }
        loaded = now;
        if (again) {
          again = false;
          refresh();
        }
      },
    );
    // A namespace that went away meanwhile: the callback sees nft fail.
    nft.stdin?.on('error', () => undefined);
    nft.stdin?.end(setUpdate(now));
  };
  monitor.stdout?.on('data', refresh);
  monitor.once('exit', () => child.kill('SIGKILL'));
  // A change between the first read and the monitor's subscription.
  refresh();
}
