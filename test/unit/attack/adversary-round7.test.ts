/**
 * Adversary round 7: attacks that worked on the code they were written against. Each test fails
 * on that code; they are skipped (OPEN) until a fix lands.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { diffText } from '../../../src/cli/commands/rewind';
import { decisionLines } from '../../../src/cli/render/events';
import { describeMessage } from '../../../src/cli/render/messages';
import { ruleLines } from '../../../src/cli/render/run';
import { commandLines, shownText, terminalText } from '../../../src/cli/render/text';
import { seccompProgram } from '../../../src/session/seccomp';
import {
  commandDetails,
  commandSummary,
  hiddenEscaped,
  markdownBackslashes,
  markdownCode,
  markdownText,
  pendingApproval,
  safeText,
} from '../../../src/shared/display';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const OPEN = false;
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

/**
 * Every netlink protocol by the raw call, with flags ORed into the type and junk in the high bits of
 * the protocol (the kernel reads an int, seccomp sees 64 bits): prints what was made and each refusal.
 */
const NETLINK_PROBE = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {'x86_64': 41, 'aarch64': 198}[os.uname().machine]
protos = list(range(32)) + [0x10000000f, 0xffffffff0000000f, 0xffffffff00000004, 0x100000009, 0xffffffff, 0x80000000, 0x100000000, 0xffffffff00000000]
for proto in protos:
    for typ in (3, 2, 3 | 0x80000, 2 | 0x800, 3 | 0x80000 | 0x800):
        fd = libc.syscall(NR, ctypes.c_ulong(16), ctypes.c_ulong(typ), ctypes.c_ulong(proto))
        err = ctypes.get_errno()
        if fd >= 0:
            print("MADE", hex(proto), hex(typ), flush=True); os.close(fd)
        elif err != 93:
            print("ERR", hex(proto), hex(typ), os.strerror(err), flush=True)
import socket
for proto in (4, 9, 12, 15, 16):
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, proto); print("PY-MADE", proto, flush=True)
    except OSError as e:
        print("PY-REFUSED", proto, e.errno, flush=True)
print("PROBED", flush=True)
`;

/** What a session needs of netlink: NETLINK_ROUTE, by glibc's getaddrinfo (AI_ADDRCONFIG asks it), Python and \`ip\`. */
const NETLINK_NEEDED = `
import socket
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.NETLINK_ROUTE); s.bind((0, 0)); s.close()
assert socket.getaddrinfo("localhost", 80, flags=socket.AI_ADDRCONFIG), "no addresses"
assert socket.getaddrinfo("127.0.0.1", 80, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)
print("ROUTE-OK")
`;

/** The lines of a probe that made a netlink socket of a protocol other than NETLINK_ROUTE (the low 32 bits 0). */
function madeNetlink(output: string): string[] {
  return output
    .split('\n')
    .filter((l) => (l.startsWith('MADE') && (BigInt(l.split(' ')[1]!) & 0xffffffffn) !== 0n) || l.startsWith('PY-MADE'));
}

/**
 * Reads a {@link safeText} display back into the text, by the rule its doc states: at a backslash,
 * another backslash is one backslash; `x`, `u`, `r` (and `n`, `t` when not multiline) start an
 * escape; anything else (or nothing) means the backslash was itself. Throws on a malformed escape.
 */
function unescapeShown(shown: string, multiline: boolean): string {
  const starts = multiline ? 'xur' : 'xurnt';
  let out = '';
  for (let i = 0; i < shown.length;) {
    if (shown[i] !== '\\') {
      const cp = shown.codePointAt(i)!;
      out += String.fromCodePoint(cp);
      i += cp > 0xffff ? 2 : 1;
      continue;
    }
    const next = shown[i + 1];
    if (next === '\\') {
      out += '\\';
      i += 2;
    } else if (next === undefined || !starts.includes(next)) {
      out += '\\';
      i += 1;
    } else if (next === 'x') {
      const hex = /^[0-9a-f]{2}/.exec(shown.slice(i + 2))![0];
      out += String.fromCharCode(parseInt(hex, 16));
      i += 4;
    } else if (next === 'u' && shown[i + 2] === '{') {
      const hex = /^\{([0-9a-f]+)\}/.exec(shown.slice(i + 2))!;
      out += String.fromCodePoint(parseInt(hex[1]!, 16));
      i += 2 + hex[0].length;
    } else if (next === 'u') {
      const hex = /^[0-9a-f]{4}/.exec(shown.slice(i + 2))![0];
      out += String.fromCharCode(parseInt(hex, 16)); // a lone surrogate stays one unit
      i += 6;
    } else {
      out += { r: '\r', n: '\n', t: '\t' }[next]!;
      i += 2;
    }
  }
  return out;
}

/** Characters that must never reach a terminal raw (line breaks and tabs aside). */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2216\uff3c\ufe68\u29f5\u2572]/;

/** A small seeded generator (mulberry32), so a failure names an input that can be run again. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('adversary round 7', () => {
  // AF_NETLINK is allowed because it "talks to the kernel about that same namespace"
  // (seccomp.ts); NETLINK_KOBJECT_UEVENT does not: the kernel broadcasts the host's device
  // events (hotplug, module loads, every change) to each network namespace its initial user
  // namespace owns, the session's included.
  t("a session's netlink socket receives the host's kernel uevents", async () => {
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
  });

  test.each([false, true])(
    'no netlink protocol but NETLINK_ROUTE opens, whatever the type flags or high bits, from a command, a job and an exact run (network %s)',
    async (network) => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const ws = tempDir();
      fs.writeFileSync(path.join(ws, 'probe.py'), NETLINK_PROBE);
      fs.writeFileSync(path.join(ws, 'needed.py'), NETLINK_NEEDED);
      const s = await startSession({ cwd: ws, workspace: ws, network });
      const cmd = await s.run('/usr/bin/python3 probe.py 2>&1');
      expect(cmd.output).toContain('PROBED');
      expect(madeNetlink(cmd.output)).toEqual([]);
      expect(cmd.output).not.toContain('ERR');
      // NETLINK_ROUTE is still made, also with high bits over a low word of 0 (the kernel reads 0).
      expect(cmd.output).toContain('MADE 0x0 0x80003');
      expect(cmd.output).toContain('MADE 0xffffffff00000000 0x3');
      for (const p of [4, 9, 12, 15, 16]) expect(cmd.output).toContain(`PY-REFUSED ${p} 93`);

      await s.run('(sleep 0.2; /usr/bin/python3 probe.py > job.txt 2>&1) >/dev/null 2>&1 &');
      const job = path.join(ws, 'job.txt');
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !(fs.existsSync(job) && fs.readFileSync(job, 'utf8').includes('PROBED'))) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const jobOut = fs.readFileSync(job, 'utf8');
      expect(jobOut).toContain('PROBED');
      expect(madeNetlink(jobOut)).toEqual([]);

      const exact = await s.runExact(['python3', 'probe.py'], { paths: ['probe.py'] });
      expect(exact.output).toContain('PROBED');
      expect(madeNetlink(exact.output)).toEqual([]);

      // Ordinary programs that speak NETLINK_ROUTE still work.
      expect((await s.run('/usr/bin/python3 needed.py 2>&1')).output).toBe('ROUTE-OK\n');
      // (iproute2's `ip` and `ss` are not among them: they size replies with MSG_PEEK, which the filter
      // refuses on every socket since it cannot tell a netlink socket from the control line's.)
      expect((await s.run('getent ahosts localhost >/dev/null && echo GETENT-OK')).output).toBe('GETENT-OK\n');
      await s.close();
    },
    120_000,
  );

  test("the filter's netlink branch, instruction by instruction: only a low word of 0 passes", () => {
    const prog = seccompProgram('x64')!;
    const insns = Array.from(
      { length: prog.length / 8 },
      (_, i) => [prog.readUInt16LE(i * 8), prog[i * 8 + 2]!, prog[i * 8 + 3]!, prog.readUInt32LE(i * 8 + 4)] as const,
    );
    // seccomp_data as the kernel fills it: every argument 64 bits, little-endian; the filter loads 32-bit words.
    const run = (nr: number, args: bigint[]): number => {
      const word = (off: number): number => {
        if (off === 0) return nr;
        if (off === 4) return 0xc000003e;
        const a = args[Math.floor((off - 16) / 8)] ?? 0n;
        return Number((off % 8 === 0 ? a : a >> 32n) & 0xffffffffn);
      };
      let acc = 0;
      for (let pc = 0; ;) {
        const [code, jt, jf, k] = insns[pc]!;
        if (code === 0x20) {
          acc = word(k);
          pc++;
        } else if (code === 0x54) {
          acc = (acc & k) >>> 0;
          pc++;
        } else if (code === 0x15) pc += 1 + (acc === k ? jt : jf);
        else if (code === 0x35) pc += 1 + (acc >= k ? jt : jf);
        else if (code === 0x06) return k;
        else throw new Error(`unexpected opcode ${code}`);
      }
    };
    const ALLOW = 0x7fff0000;
    const EPROTONOSUPPORT = 0x0005005d;
    for (const proto of [0n, 0x100000000n, 0xffffffff00000000n])
      for (const type of [2n, 3n, 0x80003n]) expect(run(41, [16n, type, proto])).toBe(ALLOW);
    for (const proto of [1n, 4n, 9n, 12n, 15n, 16n, 31n, 0x10000000fn, 0xffffffff0000000fn, 0xffffffffn, 0x80000000n])
      for (const type of [2n, 3n, 0x80003n]) expect(run(41, [16n, type, proto])).toBe(EPROTONOSUPPORT);
    // The family's high bits change nothing either: the kernel reads AF_NETLINK, so does the filter.
    expect(run(41, [0x100000010n, 3n, 15n])).toBe(EPROTONOSUPPORT);
    expect(run(41, [0x100000010n, 3n, 0n])).toBe(ALLOW);
    // inet and inet6 do not look at the protocol.
    expect(run(41, [2n, 1n, 6n])).toBe(ALLOW);
    expect(run(41, [10n, 2n, 17n])).toBe(ALLOW);
  });

  // The rewind diff escapes a real ESC (or U+202E) as the same text a file that holds the
  // literal characters backslash, x, 1, b shows: a reviewer cannot tell bytes that act on a
  // terminal or hide code (Trojan Source) from an ordinary escape in a string literal.
  t('the rewind diff tells real control characters from their escapes written as text', () => {
    expect(diffText('+a\x1b[31mb\n')).not.toBe(diffText('+a\\x1b[31mb\n'));
    expect(diffText('+a\u202eb\n')).not.toBe(diffText('+a\\u202eb\n'));
  });

  test('the escaped text reads back to exactly the text, for inputs built to collide', () => {
    const cases = [
      '+a\x1b[31mb\n',
      '+a\\x1b[31mb\n',
      '\\x1b\x1b', // literal backslash-x next to a real ESC
      '\x1b\\x1b',
      '\\\x1b', // a real backslash, then a real ESC
      '\\\\x1b', // two real backslashes, then x1b
      '\u2216\x1b', // a look-alike backslash before a real ESC: would read as a doubled one
      '\uff3c\\x1b',
      '\u2572\x1b', // a box-drawing diagonal, drawn as a backslash
      '\\\u202e',
      '\\u202e',
      '\\u{e0041}\u{e0041}',
      '\\r\r',
      '\\\r',
      'a\\',
      '\\\u0301x1b', // a combining mark on the backslash
      '"\\n" and \\d+ and C:\\Users\\x',
      '\\\\\\',
      '\\\ud800',
      '\\\n\\\t',
    ];
    const rnd = random(7);
    const alphabet = [
      '\\',
      'x',
      'u',
      'n',
      'r',
      't',
      '1',
      'b',
      '{',
      '}',
      'e',
      '2',
      '0',
      '\x1b',
      '\u202e',
      '\u2216',
      '\uff3c',
      '\u0301',
      '\n',
      '\t',
      '\r',
      '\u200b',
      '\ud800',
      '\u{e0041}',
      '😀',
      ' ',
      'a',
    ];
    for (let n = 0; n < 5000; n++) {
      const len = Math.floor(rnd() * 10);
      cases.push(Array.from({ length: len }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join(''));
    }
    for (const multiline of [true, false]) {
      const seen = new Map<string, string>();
      for (const text of cases) {
        const shown = safeText(text, multiline);
        expect([text, RAW.test(shown)]).toEqual([text, false]);
        if (!multiline) expect([text, /[\n\t]/.test(shown)]).toEqual([text, false]);
        expect([text, unescapeShown(shown, multiline)]).toEqual([text, text]);
        // Two texts never share a display.
        const other = seen.get(shown);
        if (other !== undefined) expect([text, other]).toEqual([text, text]);
        seen.set(shown, text);
      }
    }
    // What a reviewer sees, for the examples.
    expect(safeText('\\x1b\x1b')).toBe('\\\\x1b\\x1b');
    expect(safeText('\\\x1b')).toBe('\\\\\\x1b');
    expect(safeText('\u2216\x1b')).toBe('\\u2216\\x1b');
    expect(safeText('\u2572\x1b')).toBe('\\u2572\\x1b');
    // A backslash that reads as nothing else stays single: code in a diff or an output is not doubled.
    expect(safeText('"\\n" \\d+ \\.')).toBe('"\\n" \\d+ \\.');
    expect(safeText('"\\n"', false)).toBe('"\\\\n"');
  });

  test('every place that shows text from a run tells a real escape from the same text typed', () => {
    const pairs: [string, string][] = [
      ['a\x1b[31mb', 'a\\x1b[31mb'],
      ['a\u202eb', 'a\\u202eb'],
      ['\\\x1b', '\\\\x1b'],
      ['\u2216\x1b', '\\\\x1b'],
    ];
    const places: [string, (x: string) => string][] = [
      ['diff', diffText],
      ['terminal', terminalText],
      ['transcript text', (x) => describeMessage({ role: 'assistant', content: [{ type: 'text', text: x }] }, 1).join('\n')],
      [
        'transcript output',
        (x) => describeMessage({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: x }] }, 2).join('\n'),
      ],
      ['UI markdown', (x) => markdownText(x)],
      // The run's summary and details (the task, outside a code span) as the UI renders them: CommonMark drops a backslash before punctuation.
      ['UI prose', (x) => markdownBackslashes(safeText(x)).replace(/\\([!-/:-@[-`{-~])/g, '$1')],
      ['UI code span', (x) => markdownCode(x)],
      [
        'pending edit',
        (x) =>
          pendingApproval({ toolUseId: 't', command: `+${x}\n`, requestedAt: '', edit: { command: 'create', path: '/ws/a' } } as never)
            .display,
      ],
      [
        'decision',
        (x) =>
          decisionLines({
            toolUseId: 't',
            approved: false,
            decision: 'denied',
            by: 'ann',
            reason: x,
            at: '',
            source: 'human',
          } as never).join('\n'),
      ],
      ['command label', (x) => commandLines('ls', { label: `by ${x}: ` }).join('\n')],
      ['rule', (x) => ruleLines([{ id: 1, kind: 'exact', text: 'ls', by: 'ann', at: '', toolUseId: x }] as never).join('\n')],
    ];
    for (const [name, show] of places)
      for (const [real, typed] of pairs) {
        const a = show(real);
        const b = show(typed);
        expect([name, real, RAW.test(a)]).toEqual([name, real, false]);
        expect([name, real, a === b]).toEqual([name, real, false]);
      }
  });

  test('text escaped once is not escaped again on its way out: commands, summaries and details keep their one escaping', () => {
    // A command with a real ESC and the typed text \x1b: displayCommand doubles its backslashes, once.
    const command = 'echo \\x1b \x1b[2K';
    const lines = describeMessage(
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command } }] },
      1,
    );
    expect(lines[0]).toBe('claude asks to run: echo \\\\x1b \\x1b[2K    [toolu_1]');
    expect(lines).toEqual(commandLines(command, { label: 'claude asks to run: ', suffix: '    [toolu_1]' }));
    // The pass over whole lines changes nothing in them, and still catches a raw character.
    expect(lines.map(shownText)).toEqual(lines);
    expect(hiddenEscaped('ok \x1b')).toBe('ok \\x1b');
    // The UI's summary and details of that command: the display in a code span, not escaped again.
    expect(commandSummary(command, 1)).toBe('bash #1: `echo \\\\x1b \\x1b[2K`');
    expect(commandDetails(command)).toMatch(/^`echo \\\\x1b \\x1b\[2K` \(/);
    // A cut never splits an escape or a doubled backslash.
    expect(markdownText('\\\\\\\\\x1b', 4)).toBe('`\\\\…`');
    expect(markdownText('a\x1b\x1b', 6)).toBe('`a\\x1b…`');
    expect(markdownText('a\x1b\x1b', 5)).toBe('`a…`');
  });
});
