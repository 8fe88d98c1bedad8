/**
 * Files keep their owner, end to end: a worker run as root works on a
 * repository a human cloned (`workdir`), with bash and the text editor. Bash runs as the
 * repository's owner, so what the agent makes is the owner's, git works in the session and,
 * afterwards, for the owner without "dubious ownership", a file the owner adds during the run is
 * edited by both tools, and nothing changes owner. Real dev server, real worker, the scripted
 * model server; needs root and bwrap.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ScriptContentBlock } from '../../src/dev/model-server';
import { findBwrap } from '../../src/session';
import { lookupUser } from '../../src/session/identity';
import { TestBed, toolUse } from './harness';

const OWNER = 'aj-owner-test';
const ready = process.getuid?.() === 0 && findBwrap() !== null;

const edit = (id: string, input: Record<string, unknown>): ScriptContentBlock => ({
  type: 'tool_use',
  id,
  name: 'str_replace_based_edit_tool',
  input,
});

function as(user: string, argv: string[], cwd?: string): { status: number | null; out: string } {
  const r = spawnSync('runuser', ['-u', user, '--', 'env', `HOME=/home/${user}`, ...argv], {
    cwd,
    encoding: 'utf8',
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const d = ready ? describe : describe.skip;

d('a run on a repository its owner cloned', () => {
  let bed: TestBed;
  let parent: string;
  afterEach(async () => {
    await bed?.close();
    if (parent) fs.rmSync(parent, { recursive: true, force: true });
  });

  test('bash and the editor act as the owner: the owner’s files, git in and out, a file added during the run, nothing chowned', async () => {
    if (!lookupUser(OWNER)) spawnSync('useradd', ['--create-home', '--shell', '/bin/bash', OWNER]);
    const owner = lookupUser(OWNER)!;
    parent = fs.mkdtempSync(path.join(owner.home, 'aj-it-'));
    fs.chownSync(parent, owner.uid, owner.gid);
    const repo = path.join(parent, 'repo');
    expect(as(OWNER, ['git', 'init', '-q', repo]).status).toBe(0);
    expect(
      as(
        OWNER,
        ['sh', '-c', 'echo "# repo" > README.md && git add README.md && git -c user.name=o -c user.email=o@x commit -qm first'],
        repo,
      ).status,
    ).toBe(0);

    bed = await TestBed.create({
      script: {
        responses: [
          {
            content: [
              // Waits (30 s at most) for the file the owner adds while the run goes on.
              toolUse(
                'toolu_wait',
                'for i in $(seq 300); do [ -e later.txt ] && break; sleep 0.1; done; id -un; echo agent >> later.txt; echo made > made.txt',
              ),
            ],
          },
          {
            content: [
              edit('toolu_create', { command: 'create', path: 'edited.txt', file_text: 'by the editor\n' }),
              edit('toolu_replace', { command: 'str_replace', path: 'later.txt', old_str: 'agent', new_str: 'agent and editor' }),
            ],
          },
          {
            content: [
              toolUse(
                'toolu_git',
                'git add -A && git -c user.name=agent -c user.email=agent@x commit -qm "agent run" && git status --short && stat -c %U made.txt edited.txt later.txt',
              ),
            ],
          },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start({ task: 'work on my repo', approval: 'auto', workdir: repo });
    expect(as(OWNER, ['sh', '-c', 'echo "from the owner" > later.txt'], repo).status).toBe(0);
    expect(await handle.result()).toMatchObject({ status: 'completed' });

    expect(bed.resultsSentIn(1)).toEqual([expect.objectContaining({ tool_use_id: 'toolu_wait', content: `${OWNER}` })]);
    expect(bed.resultsSentIn(2).map((r) => [r.tool_use_id, r.is_error ?? false])).toEqual([
      ['toolu_create', false],
      ['toolu_replace', false],
    ]);
    // The agent's commit is named for the person's review (git-state-audit.ts).
    expect(bed.resultsSentIn(3)).toEqual([
      expect.objectContaining({
        tool_use_id: 'toolu_git',
        content: expect.stringMatching(
          new RegExp(`^${OWNER}\n${OWNER}\n${OWNER}\n\\[agent-jobs: the session left git state .*the session moved \\S+ from`),
        ),
      }),
    ]);

    expect(fs.readFileSync(path.join(repo, 'later.txt'), 'utf8')).toBe('from the owner\nagent and editor\n');
    // Everything is the owner's; the owner's git works with no dubious ownership, and the owner removes the agent's files.
    const walk = (p: string): string[] => [
      p,
      ...(fs.lstatSync(p).isDirectory() ? fs.readdirSync(p).flatMap((e) => walk(path.join(p, e))) : []),
    ];
    for (const p of walk(parent)) expect([p, fs.lstatSync(p).uid]).toEqual([p, owner.uid]);
    expect(as(OWNER, ['git', 'status', '--short'], repo)).toEqual({ status: 0, out: '' });
    expect(as(OWNER, ['git', 'log', '--format=%s'], repo).out).toBe('agent run\nfirst\n');
    expect(as(OWNER, ['rm', 'made.txt', 'edited.txt'], repo).status).toBe(0);
  });
});
