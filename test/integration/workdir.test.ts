/**
 * A working directory that cannot be one (real dev server, worker, bash, scripted model): the
 * CLI refuses what it can see before starting (a file, a file on the way, a kernel file system,
 * however the path is spelled, a relative path that leaves the workspace root); a run that gets past it (started by another client) ends
 * `failed` with the reason after its first turn, instead of spending every turn on it. The worker also refuses the
 * workspace root and the folders it hides from every session, and any folder inside one (the data dir's, the product's
 * `dist/`), however named.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cli } from './cli-process';
import { TestBed, toolUse } from './harness';
import { PROJECT_ROOT } from '../../src/settings';

describe('an unusable --workdir', () => {
  let bed: TestBed;
  let outside: string | undefined;
  afterEach(async () => {
    await bed?.close();
    if (outside) rmSync(outside, { recursive: true, force: true });
  });

  test('the CLI refuses it before starting; a run started past it ends failed after one model call, saying why', async () => {
    const again = { content: [toolUse('toolu_1', 'ls')], stop_reason: 'tool_use' as const };
    bed = await TestBed.create({ script: { responses: [again, again, again, again, again] } });
    // Outside the data dir (a folder the worker refuses before it looks at what the path is).
    const away = mkdtempSync(path.join(tmpdir(), 'aj-it-workdir-'));
    outside = away;
    const file = path.join(away, 'a-file');
    writeFileSync(file, 'x');
    const refused: Array<[string, RegExp]> = [
      [file, /it is a file, not a directory/],
      [`${file}/sub/dir`, /a-file is a file, not a directory/],
      ['/proc/nope', /under \/proc, a kernel file system/],
      ['/proc', /under \/proc, a kernel file system/],
      ['/tmp/../proc/self/x', /under \/proc, a kernel file system/],
      ['/sys//kernel/x', /under \/sys, a kernel file system/],
      ['   ', /it is empty/],
      ['../escape', /a relative path is under the worker's workspace root, and this one leaves it/],
      ['a/./../../escape', /this one leaves it/],
      // The root itself, which holds every run's folder: a person in their project meaning "here".
      [
        '.',
        /this one is that root itself \(every run's folder\): to run in the repository you are in, pass its absolute path: --workdir \/abs\/path/,
      ],
      ['./', /this one is that root itself/],
      ['src/..', /this one is that root itself/],
    ];
    for (const [dir, why] of refused) {
      const r = await cli(bed.address, 'start', 'list', 'files', '--workdir', dir, '--id', 'never-started', '--json');
      expect([dir, r.code, r.stdout]).toEqual([dir, 1, '']);
      expect(r.stderr).toMatch(why);
      expect(r.stderr).toContain('hint: give a directory');
    }
    // Nothing was started by any of them.
    expect((await cli(bed.address, 'status', 'never-started')).stderr).toContain('no run with id never-started');

    // Past the CLI (another client, or a path that differs on the worker's machine): the worker's check ends it.
    const handle = await bed.start({ task: 'list files', approval: 'auto', workdir: file, maxTurns: 5 }, 'workdir-unusable');
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.error).toContain(`cannot use ${file} as the working directory: it exists but is not a directory`);
    expect(bed.sentMessages()).toHaveLength(1);
    const viaCli = await bed.start({ task: 'list files', approval: 'auto', workdir: '/proc/nope', maxTurns: 5 });
    const procResult = await viaCli.result();
    expect(procResult).toMatchObject({ status: 'failed' });
    expect(procResult.error).toMatch(/cannot create the working directory \/proc\/nope: E[A-Z]+/);
    expect(bed.sentMessages()).toHaveLength(2);
    // A relative path that leaves the workspace root: refused by the worker too, and nothing made outside the root.
    const out = await bed.start({ task: 'list files', approval: 'auto', workdir: 'x/../../escaped-root', maxTurns: 5 });
    const outResult = await out.result();
    expect(outResult).toMatchObject({ status: 'failed' });
    expect(outResult.error).toContain('the working directory x/../../escaped-root leaves the workspace root');
    expect(existsSync(path.join(bed.workspaces, '..', 'escaped-root'))).toBe(false);
    expect(bed.sentMessages()).toHaveLength(3);

    // The workspace root itself, however it is named (relative, absolute, through a symlink), and the data dir or the
    // product's code or a folder inside them (made by the worker if missing, or through a symlink): refused by the
    // worker, since bound whole into the sandbox each would show the session every run's folder (another run's file is
    // the canary), the product's data or the code the worker runs. Nothing is made in them.
    mkdirSync(path.join(bed.workspaces, 'other-run'), { recursive: true });
    writeFileSync(path.join(bed.workspaces, 'other-run', 'secret.txt'), 'other');
    const link = path.join(bed.workspaces, '..', 'root-link');
    symlinkSync(bed.workspaces, link);
    symlinkSync(bed.dir, path.join(away, 'to-data'));
    const cases: Array<[string, RegExp]> = [
      ['.', /is the workspace root .* itself, which holds every run's folder/],
      ['a/..', /is the workspace root .* itself/],
      [bed.workspaces, /is the workspace root .* itself/],
      [link, /is the workspace root .* itself/],
      [PROJECT_ROOT, /a folder the sandbox hides from every session/],
      [path.join(PROJECT_ROOT, 'dist'), /is inside .*, a folder the sandbox hides from every session/],
      [path.join(bed.dir, 'not-made', 'yet'), /is inside .*, a folder the sandbox hides/],
      [path.join(bed.dir, 'checkpoints', 'objects'), /is inside .*, a folder the sandbox hides/],
      [path.join(away, 'to-data', 'through-link'), /is inside .*, a folder the sandbox hides/],
    ];
    for (const [workdir, why] of cases) {
      const root = await bed.start({ task: 'list files', approval: 'auto', workdir, maxTurns: 5 });
      const r = await root.result();
      expect([workdir, r.status]).toEqual([workdir, 'failed']);
      expect(r.error).toMatch(why);
    }
    expect(bed.sentMessages()).toHaveLength(3 + cases.length);
    expect(readFileSync(path.join(bed.workspaces, 'other-run', 'secret.txt'), 'utf8')).toBe('other');
    for (const made of ['not-made', 'through-link']) expect(existsSync(path.join(bed.dir, made))).toBe(false);
  }, 240_000);
});
