/**
 * Adversary round 35: a fresh attacker's quick pass on main (4cfa3fa), as root with bwrap, in real sessions of the
 * unit harness. Each finding's test asserts the safe behaviour and is skipped while its OPEN_* flag is true (both are
 * open: found at the end of the session that landed 4cfa3fa, not fixed yet). What the attacker observed is written
 * under each finding. Run with AGENT_JOBS_SLOW_TESTS=1 (the adversary rounds are slow suites: test/slow-suites.js).
 *
 * F1 (kind 4, rules): a rule-approved `git status` runs a `core.fsmonitor` the session wrote, from a repository in the
 * sandbox's private /tmp. The probe finds `git` is /usr/bin/git and the rule applies; but git discovers its repository
 * from the current folder, and /tmp/w/.git/config is covered neither by the git guard (the workspace's .git is bound
 * read-only) nor by the git audit (it moves repositories the session makes inside the workspace only). OBSERVED:
 * the gate answered rule 1 and pwn.log held `PWNED` twice, also when a background job wrote the config after the last
 * approved command (`cd /tmp/w && sleep 2`). The code runs in the session's own sandbox, with its own rights, but no
 * person was asked. Fix to consider: a rule for a program does not apply while the current folder lies in a folder the
 * session can change outside the workspace (`/tmp`, `/dev/shm`, `/var/tmp`: rule-probe.ts `changeableLookup`), or git's
 * discovery from it reaches such a git dir.
 *
 * F2 (kind 5, display): a word of the diff replaced by look-alikes of another script, whole (`ace` → Cyrillic `асе`,
 * U+0430 U+0441 U+0435; `pop` → `рор`), reads the same in the `-` and `+` lines and is not warned about: the NFKC
 * twin warning (display.ts `normalizedTwins`) misses them (they are not NFKC-equal) and the mixed-script warning sees
 * no mixed word. OBSERVED through `pendingApproval`: warnings `[]`. Fix to consider: compare a `+` line with the
 * removed lines of its run by their confusable skeleton (Unicode TR39) as well.
 */
import * as fs from 'node:fs';
import { findBwrap, type BashSession } from '../../../src/session';
import { ruleHolds } from '../../../src/activities/session';
import { pendingApproval } from '../../../src/shared/display';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';

const OPEN_RULE_TMP_REPOSITORY = true;
const OPEN_WHOLE_WORD_LOOKALIKE_DIFF = true;

afterEach(closeSessions);
afterAll(removeTempDirs);

const sandboxed = process.getuid?.() === 0 && findBwrap() !== null;

/** A workspace under /var/tmp (not the sandbox's private /tmp), writable by the session user. */
function workspace(): string {
  const ws = fs.realpathSync(fs.mkdtempSync('/var/tmp/aj-adv35-'));
  fs.chmodSync(ws, 0o777);
  return ws;
}

/** The rule's answer for `command` with rule 1 matching: the rule's number when it applies, else why not. */
async function gate(s: BashSession, command: string): Promise<number | string> {
  const j = await ruleHolds(command, 1, s);
  return 'rule' in j ? j.rule : 'needsApproval' in j ? j.needsApproval : 'exact';
}

/** A script in the workspace that leaves a mark when git runs it as its fsmonitor hook. */
const fsmonitor = (ws: string): string =>
  `printf '#!/bin/sh\\necho PWNED >> ${ws}/pwn.log\\nexit 1\\n' > ${ws}/fsmon.sh && chmod +x ${ws}/fsmon.sh`;

describe('F1: a repository in the private /tmp under a rule for git status', () => {
  const t = OPEN_RULE_TMP_REPOSITORY && sandboxed ? test.skip : sandboxed ? test : test.skip;
  t(
    'the rule does not apply, or git runs no fsmonitor the session wrote',
    async () => {
      const ws = workspace();
      try {
        const s = await startSession({ cwd: ws, workspace: ws });
        await s.run(`${fsmonitor(ws)} && mkdir -p /tmp/w && cd /tmp/w && git init -q . && git config core.fsmonitor ${ws}/fsmon.sh`);
        const g = await gate(s, 'git status');
        if (g === 1) await s.run('git status >/dev/null 2>&1');
        expect({ gate: g === 1 ? 'applied' : 'refused', marked: fs.existsSync(`${ws}/pwn.log`) }).not.toEqual({
          gate: 'applied',
          marked: true,
        });
      } finally {
        fs.rmSync(ws, { recursive: true, force: true });
      }
    },
    60_000,
  );
});

describe('F2: a whole word replaced by look-alikes of another script in an edit', () => {
  const t = OPEN_WHOLE_WORD_LOOKALIKE_DIFF ? test.skip : test;
  t.each([
    ['case $role in ace ) deny ;; esac', 'case $role in \u0430\u0441\u0435 ) deny ;; esac'],
    ['  - pop', '  - \u0440\u043e\u0440'],
  ])('%s: the review warns', (minus, plus) => {
    const diff = `--- a/f\n+++ b/f\n@@ -1 +1 @@\n-${minus}\n+${plus}\n`;
    const p = pendingApproval({
      toolUseId: 'toolu_lookalike',
      command: diff,
      requestedAt: 'now',
      edit: { command: 'str_replace', path: '/ws/f', ruleSubject: 'str_replace /ws/f' },
    });
    expect(p.warnings.length).toBeGreaterThan(0);
  });
});
