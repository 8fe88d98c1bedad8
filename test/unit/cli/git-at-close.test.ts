/**
 * What `status`, `watch` and `transcript` of a closed run print of what its git audit moved or named when its session
 * closed (src/cli/render/run.ts `gitAtCloseLines`): one line a part and one a finding, indented under a heading, each
 * escaped on its own line; a worker before those lines gave one line a session, shown as it is. And what `rewind` says
 * of the workspace's git: which commit its files then match.
 */
import { cliLinesOf, statusLinesOf } from './status-output';

const LINES = [
  "the session made git metadata that the person's git would obey later",
  'moved to .git/agent-jobs-quarantine:',
  '  .git/MERGE_HEAD (the session left a merge in progress: `git commit` would record a merge of 1234567; moved with MERGE_MSG; `git merge --abort` no longer applies (no merge is left to abort): run `git reset --merge` to put the index and the conflicted files back at HEAD, as the abort would have)',
  '  .git/MERGE_MSG (part of an operation in progress the session left, moved with it)',
  // A path with a line break: it stays in its line, escaped.
  '  evil\n  moved to /etc (forged)',
];
const closed = {
  workflowId: 'wf-1',
  status: 'completed',
  executionStatus: 'COMPLETED',
  turns: 2,
  usage: {},
  decisions: [],
  pendingApproval: null,
  result: { status: 'completed', turns: 2, text: 'done' },
  gitAtClose: ['one long line'],
  gitAtCloseLines: [LINES],
};

test('status: a heading, then each part and each finding on a line of its own, indented; a line break in a path escaped', async () => {
  const out = await statusLinesOf(closed);
  const at = out.indexOf('  git at close:');
  expect(out.slice(at, at + 6)).toEqual([
    '  git at close:',
    "    the session made git metadata that the person's git would obey later",
    '    moved to .git/agent-jobs-quarantine:',
    expect.stringMatching(/^ {6}\.git\/MERGE_HEAD \(.*`git merge --abort` no longer applies .*run `git reset --merge`/),
    '      .git/MERGE_MSG (part of an operation in progress the session left, moved with it)',
    '      evil\\n  moved to /etc (forged)',
  ]);
  expect(out.some((l) => /^ {2,6}moved to \/etc/.test(l))).toBe(false);
});

test("a worker's answer from before the lines: its one line under the heading; two sessions each under their own", async () => {
  const old = await statusLinesOf({ ...closed, gitAtCloseLines: undefined, gitAtClose: ['a; b'] });
  expect(old.slice(old.indexOf('  git at close:'), old.indexOf('  git at close:') + 2)).toEqual(['  git at close:', '    a; b']);
  const two = await statusLinesOf({ ...closed, gitAtCloseLines: [['x'], ['y']] });
  expect(two.filter((l) => l.includes('git at close') || /^ {4}[xy]$/.test(l))).toEqual([
    '  git at close (session 1 of 2):',
    '    x',
    '  git at close (session 2 of 2):',
    '    y',
  ]);
});

test('watch and transcript of the closed run print the same lines, at their own column', async () => {
  const transcript = {
    from: 0,
    total: 0,
    messages: [],
    source: 'history',
    gitAtClose: closed.gitAtClose,
    gitAtCloseLines: closed.gitAtCloseLines,
  };
  const jobs = { run: () => ({ status: () => Promise.resolve(closed), transcript: () => Promise.resolve(transcript) }) };
  const watched = await cliLinesOf(['watch', 'wf-1', '--no-prompt'], jobs);
  process.exitCode = undefined;
  const w = watched.indexOf('git at close:');
  expect(watched.slice(w, w + 3)).toEqual([
    'git at close:',
    "  the session made git metadata that the person's git would obey later",
    '  moved to .git/agent-jobs-quarantine:',
  ]);
  expect(watched).toContain('    evil\\n  moved to /etc (forged)');
  const read = await cliLinesOf(['transcript', 'wf-1'], jobs);
  const r = read.indexOf('git at close:');
  expect(read.slice(r, r + 6)).toEqual(watched.slice(w, w + 6));
});

test("rewind says which commit the workspace's files then match: the repository's HEAD, or none", async () => {
  const restore = { before: 'b'.repeat(40), changes: [], changeCount: 0, notRestored: { nested: [], git: true, excluded: [] } };
  const answer = { toTurn: 2, checkpoint: 'c'.repeat(40), droppedMessages: 3, by: 'ana', at: '' };
  const head = 'a'.repeat(40);
  const rewound = async (gitHead: string | null | undefined): Promise<string[]> =>
    cliLinesOf(['rewind', 'wf-1', '--to-turn', '2'], {
      run: () => ({ rewind: () => Promise.resolve({ ...answer, restore: { ...restore, ...(gitHead !== undefined ? { gitHead } : {}) } }) }),
    });
  expect(await rewound(head)).toContainEqual(
    `the workspace's git HEAD is ${head} (\`git rev-parse HEAD\` there): the rewind leaves .git as it is, so the files match that commit only where the checkpoint's did; \`git status\` there shows what differs`,
  );
  expect(await rewound(null)).toContainEqual(expect.stringMatching(/^the workspace's files match no commit: it is no git repository/));
  expect((await rewound(undefined)).join('\n')).not.toMatch(/HEAD|match no commit/);
});
