/**
 * Attacks on the wall between bash rules and text editor rules (docs/text-editor.md: "Rules for
 * edits never let a bash command run ..., and bash rules never approve an edit"), through the
 * `decide` Update's validator (src/workflows/approval.ts) and the worker's matchers
 * (src/policy matchRule / matchEditRule).
 *
 * Bypass found (fixed): Claude runs a bash command whose first word is the editor's name
 * (`str_replace_based_edit_tool --help`: no such program, it only fails); a person approving it
 * with `--always-prefix str_replace_based_edit_tool` (or `--always` on
 * `str_replace_based_edit_tool create /ws/a.txt`) made a rule the validator accepted, that never
 * approves the bash command (matchRule drops editor rules), and that approved every later edit
 * (or that file's creates) unasked. The validator now refuses such a rule for a bash command.
 */
import { matchEditRule, matchRule } from '../../../src/policy';
import { editRuleSubject, editRuleWords, TEXT_EDITOR_NAME } from '../../../src/contract/text-editor';
import { pendingApproval } from '../../../src/shared/display';
import type { ApprovalRule, DecideRequest, PendingEdit } from '../../../src/contract';

type Validator = (req: DecideRequest) => void;
let validator: Validator | undefined;
jest.mock('@temporalio/workflow', () => ({
  ...jest.requireActual<object>('@temporalio/workflow'),
  setHandler: (_def: unknown, _handler: unknown, opts?: { validator?: Validator }) => {
    validator = opts?.validator;
  },
  log: { info: () => undefined, warn: () => undefined },
}));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { setDecideHandler } = require('../../../src/workflows/approval') as typeof import('../../../src/workflows/approval');

function stateWaitingFor(command: string, edit?: PendingEdit, rules: ApprovalRule[] = []) {
  const pending = pendingApproval({ toolUseId: 'toolu_1', command, requestedAt: '2026-12-02T00:00:00.000Z', ...(edit ? { edit } : {}) });
  const state = { approval: { pending, decision: null, lastApplied: null }, rules, nextRuleId: rules.length + 1, result: null };
  setDecideHandler(state as never);
  return { state, sha: pending.commandSha256, validate: validator! };
}

const rule = (kind: 'exact' | 'prefix', text: string): ApprovalRule => ({ id: 1, kind, text, by: 'me', at: 'now', toolUseId: 'toolu_0' });
const editSubject = (command: 'create' | 'view', p: string) => ({ words: editRuleWords(command, p), text: editRuleSubject(command, p) });

test('a rule made on a bash command named like the editor is refused (it would approve edits, never the command)', () => {
  for (const [command, extra] of [
    [`${TEXT_EDITOR_NAME} --help`, { alwaysPrefix: TEXT_EDITOR_NAME }],
    [`${TEXT_EDITOR_NAME} create /ws/a.txt`, { always: true }],
    [`${TEXT_EDITOR_NAME} create /ws/a.txt`, { alwaysPrefix: `${TEXT_EDITOR_NAME} create` }],
    [`'${TEXT_EDITOR_NAME}' create /ws/a.txt`, { alwaysPrefix: `'${TEXT_EDITOR_NAME}'` }],
  ] as const) {
    const { sha, validate } = stateWaitingFor(command);
    const req: DecideRequest = { toolUseId: 'toolu_1', approved: true, by: 'me', commandSha256: sha, ...extra };
    // What the rule would do were it accepted: approve edits, never the bash command it was made on.
    const text = 'alwaysPrefix' in extra ? extra.alwaysPrefix : command;
    const made = rule('alwaysPrefix' in extra ? 'prefix' : 'exact', text);
    expect(matchRule(command, [made])).not.toHaveProperty('id');
    expect(matchEditRule(editSubject('create', '/ws/a.txt'), [made])).toHaveProperty('id');
    expect(() => validate(req)).toThrow(/editor/);
  }
});

test('an edit rule never approves a bash command, whatever its words; a bash rule never approves an edit', () => {
  const editRules = [rule('prefix', TEXT_EDITOR_NAME), rule('exact', editRuleSubject('create', '/ws/a.txt'))];
  for (const c of [`${TEXT_EDITOR_NAME} create /ws/a.txt`, `${TEXT_EDITOR_NAME}`, `'${TEXT_EDITOR_NAME}' x`, `"${TEXT_EDITOR_NAME}" x`])
    expect(matchRule(c, editRules)).not.toHaveProperty('id');
  const bashRules = [rule('prefix', 'cat'), rule('prefix', 'ls'), rule('exact', 'str_replace_based_edit_toolx create /ws/a.txt')];
  expect(matchEditRule(editSubject('create', '/ws/a.txt'), bashRules)).not.toHaveProperty('id');
  // An edit decision's rule must be a word prefix of the edit's own words (no bash words slipped in).
  const edit: PendingEdit = { command: 'create', path: '/ws/a.txt', ruleSubject: editRuleSubject('create', '/ws/a.txt') };
  const { sha, validate } = stateWaitingFor('--- /dev/null\n+++ b/ws/a.txt\n@@ -0,0 +1 @@\n+x\n', edit);
  for (const alwaysPrefix of [
    'cat',
    `${TEXT_EDITOR_NAME} create /ws/a.txt extra`,
    `${TEXT_EDITOR_NAME} view`,
    `${TEXT_EDITOR_NAME}  create`,
  ]) {
    const req: DecideRequest = { toolUseId: 'toolu_1', approved: true, by: 'me', commandSha256: sha, alwaysPrefix };
    if (alwaysPrefix === `${TEXT_EDITOR_NAME}  create`) expect(() => validate(req)).not.toThrow();
    else expect(() => validate(req)).toThrow();
  }
});

test('an exact edit rule matches only its file: trailing spaces, tabs, a newline or a longer name do not match', () => {
  const rules = [rule('exact', editRuleSubject('create', '/ws/a.txt'))];
  for (const p of ['/ws/a.txt ', '/ws/a.txt\t', '/ws/a.txt\n', '/ws/a.txt/b', '/ws/a.txtx', '/ws//a.txt', '/ws/./a.txt'])
    expect({ p, m: matchEditRule(editSubject('create', p), rules) }).not.toHaveProperty('m.id');
  // A prefix rule naming a path is one word: a path with a space in it is not "that path and more words".
  const prefix = [rule('prefix', `${TEXT_EDITOR_NAME} create /ws/docs`)];
  expect(matchEditRule(editSubject('create', '/ws/docs /ws/secret'), prefix)).not.toHaveProperty('id');
  expect(matchEditRule(editSubject('create', '/ws/docs'), prefix)).toHaveProperty('id');
});
