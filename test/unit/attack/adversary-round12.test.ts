/**
 * Adversary round 12: attacks on today's fixes (the sandbox's bounded /dev/pts, the seccomp refusal
 * of BPF attach, and markAsciiLookalikes). Each test asserts the safe behaviour; OPEN skips them
 * while a fix is missing.
 *
 * Kind 5 (the approver reads ASCII that is not), whole words of look-alikes: displayCommand shows
 * these verbatim, no warning: `git push ｏｒｉｇｉｎ main` and `rm -rf ｓｒｃ` (fullwidth Latin: one
 * script, so no mixed-script mark, and no ASCII letter beside it), `rm -rf 𝗌𝗋𝖼` and `cp a 𝚜𝚛𝚌`
 * (mathematical sans-serif and monospace letters, indistinguishable from ASCII in most terminal
 * fonts), `kill -9 𝟣`, `sleep 𝟫𝟫𝟫𝟫` (mathematical digits), and a Cyrillic word inside ASCII quotes,
 * `rm -rf 'ѕгс'`, `rm -rf "Ѕ"` (quotes do not count as the "ASCII punctuation" beside which a word of
 * look-alikes is marked, though `/`, `{`, `.` do). Also verbatim: a bare Cyrillic word `cat О`,
 * `git push -f ореп` (one script, by design "a word of one script stays readable"; kept here as
 * the same hole for letters that all have ASCII skeletons). Steps: send any of these as a command
 * needing approval; the person sees what reads as `git push origin main`, `rm -rf src`. Fix: mark
 * any word (quotes included as word boundaries) made only of characters whose skeleton is ASCII
 * when any of them is non-ASCII, at least for fullwidth (U+FF01-FF5E) and Mathematical
 * Alphanumeric Symbols (U+1D400-1D7FF), whose NFKC is ASCII, and treat `'` and `"` as punctuation.
 * FIXED: markAsciiLookalikes (src/shared/display.ts) counts quotes as the punctuation beside which a
 * word made only of look-alikes is marked, and marks every fullwidth or mathematical letter or digit
 * wherever it stands (isAsciiForm). Still open, by design: a bare word of one script whose letters
 * all have ASCII skeletons (`cat О`, `git push -f ореп`), indistinguishable from a real word of
 * that script (`со`, `как`) without a dictionary.
 *
 * Held ((b) and the rest of (a) by reading the code only, for want of time):
 * - (a) observed in a real session (root worker, bash as agent-jobs): opening `/dev/ptmx`,
 *   `/dev/pts/ptmx` and `/proc/self/root/dev/ptmx` 48 times gave 32 ptys, then ENOSPC;
 *   `/proc/1/root/dev/ptmx` EACCES; the host's devtmpfs and devpts lie under the sandbox's tmpfs
 *   `/dev` (covered, no path reaches its `ptmx`). DEVPTS_SCRIPT: `sh -p -c` with explicit PATH for umount/mount, explicit source and
 *   target (no fstab), `-n` (no mtab); nothing it reads is the session's (it runs before bash;
 *   /sbin helpers like mount.devpts are on the read-only root). /dev/ptmx is bwrap's symlink to
 *   pts/ptmx, so both name the bounded instance; bwrap's unbounded one is unmounted first, and
 *   the session has no CAP_SYS_ADMIN nor user namespaces to umount or mount another. /dev/tty is
 *   the controlling tty, never a new pty. NOT covered: a worker that is not root (identity null)
 *   keeps bwrap's unbounded devpts (module doc says bounded "as root" only); untestable as root here.
 * - (b) setsockopt level/option compared on low words as the kernel reads them; no socketcall
 *   (foreign arches denied, x32 denied); prctl(PR_SET_SECCOMP, FILTER) and seccomp(SET_MODE_FILTER)
 *   EINVAL; PACKET_FANOUT_CBPF/EBPF needs AF_PACKET and CAP_NET_RAW (no caps, no user namespaces);
 *   TUNATTACHFILTER and PPPIOCSPASS/ACTIVE need /dev/net/tun or /dev/ppp, absent from bwrap's /dev;
 *   xt_bpf and cls_bpf need CAP_NET_ADMIN; io_uring refused.
 */
import { displayCommand } from '../../../src/shared/display';

const OPEN = false;
const t = OPEN ? test.skip : test;

describe('kind 5: words made wholly of ASCII look-alikes', () => {
  const commands = [
    'git push ｏｒｉｇｉｎ main',
    'rm -rf ｓｒｃ',
    'rm -rf 𝗌𝗋𝖼',
    'cp a 𝚜𝚛𝚌',
    'kill -9 𝟣',
    'sleep 𝟫𝟫𝟫𝟫',
    "rm -rf 'ѕгс'",
    'rm -rf "Ѕ"',
  ];
  for (const command of commands) {
    t(`${JSON.stringify(command)} is not shown verbatim`, () => {
      const d = displayCommand(command);
      expect(d.warnings).not.toEqual([]);
      expect(d.text).not.toBe(command);
    });
  }

  // What the fix must not flag: text of other scripts in quotes, and halfwidth forms that are
  // not ASCII letters or digits.
  test.each(["echo 'привет'", 'git commit -m "日本語のテキスト"', "echo 'Straße'", "echo 'ｶﾀｶﾅ'", 'echo ファイル.txt'])(
    '%s is shown as it is',
    (command) => {
      const d = displayCommand(command);
      expect({ text: d.text, warnings: d.warnings }).toEqual({ text: command, warnings: [] });
    },
  );
});
