/**
 * `approve` of a text editor change reads back what the change then did (the client's `editOutcome`, from the run's
 * history): an edit the worker refused (the file changed since it was shown) is not reported as approved alone.
 */
import { displayCommand } from '../../../src/shared/display';
import { cliLinesOf } from './status-output';

const DIFF = '--- a/ws/a.txt\n+++ b/ws/a.txt\n@@ -1 +1 @@\n-one two\n+one three\n';
const pending = {
  toolUseId: 'toolu_change',
  command: DIFF,
  requestedAt: '',
  display: DIFF,
  warnings: [],
  commandSha256: displayCommand(DIFF).sha256,
  edit: { command: 'str_replace', path: '/ws/a.txt', ruleSubject: 'str_replace_based_edit_tool str_replace /ws/a.txt' },
};
const decided = {
  answer: { applied: true, toolUseId: 'toolu_change', decision: 'approved', by: 'alice', command: pending.edit.ruleSubject },
  command: displayCommand(DIFF),
  pending,
  paused: false,
};

/** `approve run-1` (and `args`) against a run whose edit then did `outcome`. */
async function approve(outcome: object | null, ...args: string[]): Promise<{ lines: string[]; code: number | undefined; asked: string[] }> {
  const asked: string[] = [];
  const jobs = {
    run: () => ({
      decide: () => Promise.resolve(decided),
      editOutcome: (id: string) => (asked.push(id), Promise.resolve(outcome)),
    }),
  };
  const lines = await cliLinesOf(['approve', 'run-1', ...args], jobs);
  const code = process.exitCode as number | undefined;
  process.exitCode = undefined;
  return { lines, code, asked };
}

test('an edit refused after its approval: approve says nothing was written and why, and exits 1', async () => {
  const why =
    'Error: /ws/a.txt changed since the edit was shown for approval: the change it would make now is not the one a person approved (sha256 0123456789ab), so nothing was written. View the file again and retry.';
  const { lines, code, asked } = await approve({ applied: false, isError: true, text: why });
  expect(asked).toEqual(['toolu_change']);
  expect(lines[0]).toBe('approved toolu_change in run-1 by alice: text editor str_replace /ws/a.txt');
  expect(lines).toContainEqual(`  but nothing was written: ${why}`);
  expect(code).toBe(1);
  const json = await approve({ applied: false, isError: true, text: why }, '--json');
  expect(JSON.parse(json.lines.join('\n'))).toMatchObject({ decision: 'approved', outcome: { applied: false, isError: true, text: why } });
});

test('an edit written says so; one whose outcome is not in the run yet says where to read it', async () => {
  const written = await approve({ applied: true, isError: false, text: 'Successfully replaced text at exactly one location.' });
  expect(written.lines).toContain('  written');
  expect(written.code).toBeUndefined();
  const unknown = await approve(null);
  expect(unknown.lines).toContainEqual(expect.stringMatching(/^ {2}what it did is not in the run yet .*transcript run-1/));
  expect(unknown.code).toBeUndefined();
});
