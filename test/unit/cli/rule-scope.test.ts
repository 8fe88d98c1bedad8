/**
 * How long an approval rule holds, where the CLI adds, lists or shows one: `approve --always` / `--always-prefix`,
 * `rules`, `status` and `watch`'s decision line say it lasts for this run only (src/cli/render/run.ts RULE_SCOPE).
 */
import { displayCommand } from '../../../src/shared/display';
import { decisionLines } from '../../../src/cli/render/events';
import { cliLinesOf, statusLinesOf } from './status-output';

const rule = { id: 1, kind: 'prefix' as const, text: 'npm run', by: 'ana', at: '2026-12-01T16:02:11.000Z', toolUseId: 'toolu_02' };
const SCOPE = /for this run only, until it ends or the rule is removed .*a new run or a fork starts with none/;

test('approve --always-prefix says the rule it added holds for this run only', async () => {
  const pending = {
    toolUseId: 'toolu_02',
    command: 'npm run lint',
    requestedAt: '',
    display: 'npm run lint',
    warnings: [],
    commandSha256: displayCommand('npm run lint').sha256,
  };
  const decided = {
    answer: { applied: true, toolUseId: 'toolu_02', decision: 'approved', by: 'ana', rule, command: 'npm run lint' },
    command: displayCommand('npm run lint'),
    pending,
    paused: false,
  };
  const lines = await cliLinesOf(['approve', 'run-1', '--always-prefix', 'npm run'], {
    run: () => ({ decide: () => Promise.resolve(decided) }),
  });
  expect(lines[0]).toMatch(/^approved toolu_02 in run-1 by ana \(rule 1: prefix "npm run"\): npm run lint/);
  expect(lines.join('\n')).toMatch(SCOPE);
  expect(lines).toContainEqual(expect.stringMatching(/^ {2}rule 1 approves its later matching commands for this run only/));
});

test('rules lists the rules, then how long they hold; status the same under its approval rules', async () => {
  const listed = await cliLinesOf(['rules', 'run-1'], { run: () => ({ rules: () => Promise.resolve([rule]) }) });
  expect(listed[0]).toBe('1. starting with "npm run"  (by ana, 2026-12-01T16:02:11.000Z, from toolu_02)');
  expect(listed[1]).toMatch(SCOPE);
  const status = await statusLinesOf({ workflowId: 'run-1', status: 'running', turns: 2, usage: {}, rules: [rule] });
  const at = status.indexOf('  approval rules:');
  expect(status[at + 1]).toMatch(/^ {4}1\. starting with "npm run"/);
  expect(status[at + 2]).toMatch(SCOPE);
});

test("watch's line for an approval that added a rule says it is for this run only", () => {
  const lines = decisionLines({
    toolUseId: 'toolu_02',
    approved: true,
    decision: 'approved',
    by: 'ana',
    at: '',
    source: 'human',
    rule: 1,
  } as never);
  expect(lines).toEqual(['✓ toolu_02 approved by ana (and rule 1 added, for this run only)']);
});

test('watch of a closed run says, under the decision, why the rule that matched its command did not apply', async () => {
  const why = 'rule 1 matches, but git resolves to /ws/tools/git, a file of the workspace: the rule does not apply; a person decides';
  const closed = {
    workflowId: 'run-1',
    status: 'completed',
    executionStatus: 'COMPLETED',
    turns: 2,
    usage: {},
    pendingApproval: null,
    result: { status: 'completed', turns: 2, text: 'done' },
    decisions: [
      { toolUseId: 'toolu_4', approved: false, decision: 'denied', by: 'ana', reason: 'not that git', at: '', source: 'update' },
      { toolUseId: 'toolu_2', approved: true, decision: 'approved', by: 'ana', at: '', source: 'rule', rule: 1 },
    ],
    ruleNotApplied: { toolu_4: why },
  };
  const transcript = { from: 0, total: 0, messages: [], source: 'history' };
  const jobs = { run: () => ({ status: () => Promise.resolve(closed), transcript: () => Promise.resolve(transcript) }) };
  const lines = await cliLinesOf(['watch', 'run-1', '--no-prompt'], jobs);
  process.exitCode = undefined;
  const at = lines.indexOf('✗ toolu_4 denied by ana: not that git');
  expect(lines[at + 1]).toBe(`  it waited for a person: ${why}`);
  expect(lines.filter((l) => l.includes('it waited for a person'))).toHaveLength(1);
});
