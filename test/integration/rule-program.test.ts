/**
 * CASES C33 through a real worker, the dev server and the CLI: `approve --always-prefix "git status"`,
 * then an approved command that writes tools/git and puts tools/ first on PATH. The next
 * `git status --short` must wait for a person (the pending approval says what git resolves to), and
 * tools/git must never run; before that, the rule ran the system's git unasked. The closed run's `watch` says why the
 * rule did not decide it, read from the history.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cli } from './cli-process';
import { TestBed, waitFor } from './harness';
import { asks, end } from './steering-helpers';

const SHADOW = `mkdir -p tools && printf '#!/bin/sh\\necho ran >> fake.log\\n' > tools/git && chmod +x tools/git && export PATH="$PWD/tools:$PATH"`;

describe('an approval rule runs only the program it names', () => {
  let bed: TestBed;
  afterAll(async () => bed?.close());

  test('a git status rule does not run a workspace git put first on PATH; it still runs the system git', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          asks(['toolu_1', 'git status --short']),
          asks(['toolu_2', 'git status']),
          asks(['toolu_3', SHADOW]),
          asks(['toolu_4', 'git status --short']),
          end('done'),
        ],
      },
    });
    const a = bed.address;
    const id = `rule-program-${Date.now()}`;
    const handle = await bed.start({ task: 'shadow git', approval: 'always', approvalTimeout: '60s' }, 'rule-program', id);
    const status = async (): Promise<{ status: string; details: string; pendingApproval: { toolUseId: string } | null }> =>
      JSON.parse((await cli(a, 'status', id, '--json')).stdout) as never;
    const pending = (toolUseId: string) =>
      waitFor(`${toolUseId} pending`, async () => ((await status()).pendingApproval?.toolUseId === toolUseId ? true : null));

    await pending('toolu_1');
    const added = await cli(a, 'approve', id, '--always-prefix', 'git status', '--by', 'tester');
    expect(added.code).toBe(0);
    // How long the rule holds: this run only.
    expect(added.stdout).toMatch(
      /\n {2}rule 1 approves its later matching commands for this run only, .*a new run or a fork starts with none\n/,
    );
    await pending('toolu_3');
    expect((await cli(a, 'approve', id, '--by', 'tester')).code).toBe(0);
    await pending('toolu_4');
    const s = await status();
    expect(s.details).toMatch(/rule 1 matches, but git resolves to .*tools\/git, a file of the workspace: the rule does not apply/);
    expect((await cli(a, 'deny', id, '--by', 'tester', '--reason', 'not that git')).code).toBe(0);
    expect((await handle.result()).status).toBe('completed');

    // toolu_2 ran by the rule (the system git); toolu_4 never ran, and nothing ran tools/git.
    expect(bed.audit().map((r) => r.command)).toEqual(['git status --short', 'git status', SHADOW]);
    const decisions = (await bed.status(handle)).decisions.map((d) => [d.toolUseId, d.source]);
    expect(decisions).toEqual(expect.arrayContaining([['toolu_2', 'rule']]));
    expect(decisions.find(([t]) => t === 'toolu_4')?.[1]).not.toBe('rule');
    expect(fs.existsSync(path.join(bed.workspaces, id, 'tools', 'git'))).toBe(true);
    expect(fs.existsSync(path.join(bed.workspaces, id, 'fake.log'))).toBe(false);
    // The closed run's watch (read from its history) says why the rule did not decide toolu_4, as status did while it waited.
    const watched = await cli(a, 'watch', id, '--no-prompt');
    expect(watched.stdout).toMatch(
      /✗ toolu_4 denied by tester: not that git\n {2}it waited for a person: rule 1 matches, but git resolves to .*tools\/git, a file of the workspace: the rule does not apply; a person decides\n/,
    );
    const json = (await cli(a, 'watch', id, '--json')).stdout.split('\n').filter((l) => l !== '');
    const decided = json.map((l) => JSON.parse(l) as { event: string; toolUseId?: string; ruleNotApplied?: string });
    expect(decided.find((e) => e.event === 'decision' && e.toolUseId === 'toolu_4')?.ruleNotApplied).toMatch(
      /^rule 1 matches, but git resolves to /,
    );
  }, 180_000);
});
