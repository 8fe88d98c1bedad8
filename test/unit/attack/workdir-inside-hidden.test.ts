/**
 * Attack: a run's working directory inside a folder the sandbox hides from every session.
 *
 * The workspace is bound whole into the sandbox, writable, and the sandbox hides only what lies inside it. The worker
 * refused a workdir that *was* the workspace root, the data dir, the checkpoint store or the product's code, but not
 * one inside them: `<data dir>/x`, `<checkpoint store>/objects`, the product's `dist/` were accepted (made first if
 * missing), and the session read and wrote the product's data, other runs' checkpoints or the code the worker runs.
 *
 * Fixed in `refuseProductDir` (src/activities/session.ts): equal to or inside any hidden folder is refused, however
 * spelled (`..`, a symlink to it, a folder not made yet), except a folder strictly inside the workspace root when the
 * hidden folder holds the root (the data dir above it, the product's code in a dev checkout), unless a hidden folder
 * inside the root holds it; `openSession` checks before making the folder and again after.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSessionActivities, refuseProductDir, SessionRegistry } from '../../../src/activities/session';

/** A worker's folders: the product's code, its data dir, the workspace root, the checkpoint store, one hidden folder inside the root. */
interface Layout {
  top: string;
  product: string;
  data: string;
  root: string;
  store: string;
  inner: string;
  hidden: string[];
}

/** `dev`: the data dir inside the product's checkout (the default); `apart`: the data dir elsewhere. */
function layout(top: string, kind: 'dev' | 'apart'): Layout {
  const product = path.join(top, 'product');
  const data = kind === 'dev' ? path.join(product, 'data') : path.join(top, 'data');
  const root = path.join(data, 'workspaces');
  const store = path.join(data, 'checkpoints');
  // A checkpoint store or an AGENT_JOBS_SANDBOX_HIDE folder an operator put under the root.
  const inner = path.join(root, '.hidden-store');
  for (const dir of [path.join(product, 'dist'), path.join(product, 'src'), path.join(store, 'objects'), inner, path.join(data, 'x')])
    mkdirSync(dir, { recursive: true });
  // In the worker's order (src/settings.ts sessionHiddenPaths): data dir, workspace root, audit log, store, product, more.
  return { top, product, data, root, store, inner, hidden: [data, root, path.join(data, 'audit.jsonl'), store, product, inner] };
}

async function refusal(workdir: string, l: Layout): Promise<string | undefined> {
  try {
    await refuseProductDir(workdir, l.root, l.hidden);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'WorkdirUnusable', nonRetryable: true });
    return (err as Error).message;
  }
}

describe.each(['dev', 'apart'] as const)('refuseProductDir, data dir %s', (kind) => {
  let l: Layout;
  beforeEach(() => (l = layout(mkdtempSync(path.join(tmpdir(), 'aj-hidden-wd-')), kind)));
  afterEach(() => rmSync(l.top, { recursive: true, force: true }));

  test('a folder inside a hidden one is refused, however it is spelled', async () => {
    symlinkSync(path.join(l.data, 'x'), path.join(l.top, 'to-data-x'));
    symlinkSync(path.join(l.product, 'dist'), path.join(l.top, 'to-dist'));
    symlinkSync(l.store, path.join(l.top, 'to-store'));
    symlinkSync(l.inner, path.join(l.root, 'run-link'));
    const refused: Array<[string, RegExp]> = [
      [path.join(l.data, 'x'), /is inside .*data, a folder the sandbox hides from every session/],
      [path.join(l.data, 'not', 'made', 'yet'), /is inside .*data, a folder the sandbox hides/],
      [path.join(l.store, 'objects'), /is inside .*checkpoints, a folder the sandbox hides/],
      [path.join(l.store, 'objects', 'pack-to-be'), /is inside .*checkpoints/],
      [path.join(l.product, 'dist'), /is inside .*product, a folder the sandbox hides/],
      [path.join(l.product, 'src', 'activities'), /is inside .*product/],
      [`${l.root}/../x`, /is inside .*data/],
      [`${l.root}/run-1/../../checkpoints/objects`, /is inside .*checkpoints/],
      [path.join(l.top, 'to-data-x'), /is inside .*data/],
      [path.join(l.top, 'to-data-x', 'later'), /is inside .*data/],
      [path.join(l.top, 'to-dist'), /is inside .*product/],
      [path.join(l.top, 'to-store', 'objects'), /is inside .*checkpoints/],
      // Under the root, but inside a hidden folder that lies inside the root.
      [path.join(l.inner, 'objects'), /is inside .*\.hidden-store/],
      [path.join(l.root, 'run-link'), /is .*\.hidden-store/],
      [path.join(l.root, 'run-link', 'sub'), /is inside .*\.hidden-store/],
    ];
    for (const [workdir, why] of refused) expect([workdir, await refusal(workdir, l)]).toEqual([workdir, expect.stringMatching(why)]);
  });

  test('the hidden folders themselves and the root are refused too', async () => {
    symlinkSync(l.root, path.join(l.top, 'root-link'));
    expect(await refusal(l.root, l)).toMatch(/is the workspace root .* itself/);
    expect(await refusal(path.join(l.top, 'root-link'), l)).toMatch(/is the workspace root .* itself/);
    for (const h of [l.data, l.store, l.product, l.inner]) expect(await refusal(h, l)).toMatch(/ is .*, a folder the sandbox hides/);
  });

  test("a run's folder under the root, a folder elsewhere and one above the product are fine", async () => {
    mkdirSync(path.join(l.root, 'run-1'));
    symlinkSync(l.root, path.join(l.top, 'root-link'));
    const fine = [
      path.join(l.root, 'run-1'),
      path.join(l.root, 'run-2', 'not', 'made'),
      `${l.root}/a/../run-3`,
      path.join(l.top, 'root-link', 'run-1'),
      // Names that only begin like a hidden folder's.
      `${l.inner}-other`,
      `${l.product}2`,
      // Beside the data dir: in a dev checkout that is inside the product's code.
      ...(kind === 'apart' ? [`${l.data}-other/x`] : []),
      path.join(l.top, 'elsewhere', 'repo'),
      // Above every hidden folder: the sandbox hides them inside it.
      l.top,
    ];
    for (const workdir of fine) expect([workdir, await refusal(workdir, l)]).toEqual([workdir, undefined]);
  });
});

describe('openSession with the worker’s hidden folders', () => {
  let l: Layout;
  let registry: SessionRegistry;
  beforeEach(() => (l = layout(mkdtempSync(path.join(tmpdir(), 'aj-hidden-open-')), 'dev')));
  afterEach(async () => {
    await registry?.closeAll();
    rmSync(l.top, { recursive: true, force: true });
  });

  function activities() {
    registry = new SessionRegistry(4);
    const acts = createSessionActivities({
      registry,
      workerId: 'w1',
      taskQueue: 'q1',
      workspaceRoot: l.root,
      checkpointRoot: l.store,
      sessionOptions: { sandbox: 'none', user: null, auditLog: path.join(l.data, 'audit.jsonl'), hidePaths: l.hidden },
    });
    const env = new MockActivityEnvironment({ attempt: 1 });
    return {
      ...acts,
      run: <A extends unknown[], R>(fn: (...a: A) => Promise<R>, ...args: A): Promise<R> =>
        env.run<A, R, (...a: A) => Promise<R>>(fn, ...args),
    };
  }

  test('a workdir inside the data dir, the store or the code fails for good, and nothing is made there', async () => {
    const a = activities();
    symlinkSync(path.join(l.store, 'objects'), path.join(l.top, 'to-objects'));
    const cases: Array<[string, RegExp]> = [
      [path.join(l.data, 'blobs-to-be', 'x'), /is inside .*data/],
      // Relative (under the root: a relative path cannot leave it), into the hidden folder inside the root.
      ['run/../.hidden-store/objects-to-be', /is inside .*\.hidden-store/],
      [path.join(l.top, 'to-objects'), /is inside .*checkpoints/],
      [path.join(l.product, 'node_modules', 'planted'), /is inside .*product/],
    ];
    for (const [workdir, why] of cases) {
      const open = a.run(a.openSession, { workflowId: 'run-1', workdir });
      await expect(open).rejects.toMatchObject({ type: 'WorkdirUnusable', nonRetryable: true, message: expect.stringMatching(why) });
    }
    expect(registry.count).toBe(0);
    expect(existsSync(path.join(l.data, 'blobs-to-be'))).toBe(false);
    expect(existsSync(path.join(l.inner, 'objects-to-be'))).toBe(false);
    expect(existsSync(path.join(l.product, 'node_modules'))).toBe(false);
  });

  test("a run's own folder under the root opens (the product's code and the data dir hold the root)", async () => {
    const a = activities();
    const own = await a.run(a.openSession, { workflowId: 'run-2' });
    expect(own.cwd).toBe(path.join(l.root, 'run-2'));
    const named = await a.run(a.openSession, { workflowId: 'run-3', workdir: 'mine/repo' });
    expect(named.cwd).toBe(path.join(l.root, 'mine', 'repo'));
  });
});
