/**
 * The host ranges a `--network` sandbox refuses (src/session/network.ts):
 * read from the kernel's routing tables, merged into disjoint nft interval
 * set elements. The sessions that prove the rules hold are in
 * test/unit/attack/network-isolation.test.ts and adversary-round3.test.ts.
 */
import { disjointRanges, hostRanges, namespaceRules, REFUSED_RANGES } from '../../../src/session/network';

/** /proc/net/fib_trie of a host with lo, eth0 192.0.2.2/24, a down bridge 198.51.100.77 and a local route 198.51.100.128/25. */
const FIB_TRIE = `Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 192.0.2.0/24 2 0 2
        |-- 192.0.2.0
           /24 link UNICAST
Local:
  +-- 0.0.0.0/0 3 0 5
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
     +-- 198.51.100.0/24 2 0 2
        |-- 198.51.100.77
           /32 host LOCAL
        |-- 198.51.100.128
           /25 host LOCAL
`;
const IPV6_ROUTE = `fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000003 00000000 80200001       lo
20010db8000100000000000000000000 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000003 00000000 00100001     eth0
`;

test('the host ranges are every local and broadcast route (IPv4) and every local and anycast route (IPv6), whole prefixes, not the unicast ones', () => {
  const r = hostRanges(FIB_TRIE, IPV6_ROUTE);
  expect(r.v4.sort()).toEqual(
    ['127.0.0.0/8', '127.0.0.1/32', '127.255.255.255/32', '192.0.2.2/32', '192.0.2.255/32', '198.51.100.128/25', '198.51.100.77/32'].sort(),
  );
  expect(r.v6.sort()).toEqual(
    [
      '0000:0000:0000:0000:0000:0000:0000:0001/128',
      '2001:0db8:0000:0000:0000:0000:0000:0000/64',
      '2001:0db8:0001:0000:0000:0000:0000:0000/128',
    ].sort(),
  );
});

test('this machine: its loopback and its interfaces are among the host ranges', () => {
  const r = hostRanges();
  expect(r.v4).toContain('127.0.0.0/8');
});

test('overlapping ranges become disjoint set elements: a range inside another is dropped, each kept once', () => {
  expect(
    disjointRanges(
      ['127.0.0.1/32', '127.0.0.0/8', '10.0.2.2', '10.0.0.0/8', '198.51.100.128/25', '198.51.100.77/32', '198.51.100.77/32'],
      32,
    ),
  ).toEqual(['10.0.0.0/8', '127.0.0.0/8', '198.51.100.77/32', '198.51.100.128/25']);
  expect(disjointRanges(['::1/128', '::/127', 'fc00::/7', 'fd00::2/128', '2001:0db8:0000:0000:0000:0000:0000:0000/64'], 128)).toEqual([
    '::/127',
    '2001:0db8:0000:0000:0000:0000:0000:0000/64',
    'fc00::/7',
  ]);
});

test('the rules accept only the namespace loopback and DNS on port 53 before refusing the sets, which hold the fixed ranges and the host', () => {
  const rules = namespaceRules(hostRanges(FIB_TRIE, IPV6_ROUTE));
  expect(rules).toContain('198.51.100.128/25');
  for (const r of [...REFUSED_RANGES.v4, ...REFUSED_RANGES.v6]) expect(rules).toContain(r);
  const order = ['oifname "lo" accept', 'udp dport 53 accept', 'tcp dport 53 accept', 'ip daddr @host4 reject', 'ip6 daddr @host6 reject'];
  expect(order.map((o) => rules.indexOf(o))).toEqual([...order.map((o) => rules.indexOf(o))].sort((a, b) => a - b));
  expect(order.every((o) => rules.includes(o))).toBe(true);
});
