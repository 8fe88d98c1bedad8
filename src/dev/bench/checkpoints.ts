/**
 * Disk cost and time of workspace checkpoints (docs/rewind.md) on a real repository: a local
 * clone of `--repo` (default: /root/.pyenv when present, else this project) is the workspace;
 * K checkpoints are taken with a small change between each (3 files appended to, 1 added,
 * 1 deleted), as an agent's turns would make. Prints the workspace size, the store's bytes on
 * disk after the first checkpoint and after K, the cost per further checkpoint, the time of a
 * checkpoint and of a restore to the first one.
 *
 * Usage: npm run bench:checkpoints [-- --repo DIR] [--checkpoints K] [--json]
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, lstatSync, mkdtempSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { restoreCheckpoint, takeCheckpoint, type Checkpoint } from '../../checkpoint/store';
import { PROJECT_ROOT } from '../../settings';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** Bytes of regular files under `dir` (skipping `.git` when `skipGit`), and their count. */
function sizeOf(dir: string, skipGit: boolean): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (skipGit && e.name === '.git') continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        bytes += lstatSync(p).size;
        files++;
      }
    }
  };
  walk(dir);
  return { bytes, files };
}

/** Bytes `dir` takes on disk (blocks, as `du -k` counts them). */
function diskBlocks(dir: string): number {
  return Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) * 1024 || 0;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

/** Text files of the workspace to change between checkpoints (deterministic: sorted, every 7th). */
function textFiles(ws: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.name === '.git') continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else if (e.isFile() && /\.(md|txt|sh|ts|js|py|json|c|h)$|^[^.]+$/.test(e.name)) out.push(r);
    }
  };
  walk(ws, '');
  return out.filter((_, i) => i % 7 === 0);
}

async function main(): Promise<void> {
  const repo = path.resolve(arg('--repo') ?? (existsSync('/root/.pyenv/.git') ? '/root/.pyenv' : PROJECT_ROOT));
  const k = Number(arg('--checkpoints') ?? 20);
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-bench-cp-'));
  try {
    const ws = path.join(dir, 'ws');
    execFileSync('git', ['clone', '-q', '--no-hardlinks', repo, ws]);
    const root = path.join(dir, 'stores');
    const workspace = sizeOf(ws, true);
    const userGit = diskBlocks(path.join(ws, '.git'));
    const files = textFiles(ws);
    const times: number[] = [];
    let first: Checkpoint | null = null;
    let afterFirst = 0;
    for (let i = 0; i < k; i++) {
      if (i > 0) {
        for (let j = 0; j < 3; j++) appendFileSync(path.join(ws, files[(i * 3 + j) % files.length]!), `\nchange ${i}.${j}\n`);
        writeFileSync(path.join(ws, `new-${i}.txt`), 'x'.repeat(4096));
        const gone = files[(i * 5 + 1) % files.length]!;
        if (existsSync(path.join(ws, gone))) unlinkSync(path.join(ws, gone));
      }
      const t = performance.now();
      const cp = await takeCheckpoint(root, ws, { maxBytes: 10 * 1024 ** 3 }, `bench ${i}`);
      times.push(performance.now() - t);
      if ('skipped' in cp) throw new Error(cp.skipped);
      if (!first) {
        first = cp;
        afterFirst = diskBlocks(cp.store);
      }
    }
    const store = first!.store;
    const afterK = diskBlocks(store);
    const t = performance.now();
    await restoreCheckpoint(store, ws, first!.id);
    const restoreMs = performance.now() - t;
    const restoredSame = sizeOf(ws, true).bytes === workspace.bytes;
    // What the same objects take once packed (the store is not repacked by the worker today).
    execFileSync('git', ['--git-dir', store, 'repack', '-adq']);
    const packed = diskBlocks(store);
    const result = {
      repo,
      checkpoints: k,
      workspaceBytes: workspace.bytes,
      workspaceFiles: workspace.files,
      userGitDirBytes: userGit,
      storeBytesAfterFirst: afterFirst,
      storeBytesAfterK: afterK,
      storeBytesAfterKPacked: packed,
      bytesPerLaterCheckpoint: Math.round((afterK - afterFirst) / Math.max(1, k - 1)),
      firstCheckpointMs: Math.round(times[0]!),
      laterCheckpointMedianMs: Math.round(median(times.slice(1))),
      restoreToFirstMs: Math.round(restoreMs),
      restoredSizeMatches: restoredSame,
    };
    if (process.argv.includes('--json')) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return;
    }
    const mb = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MB`;
    process.stdout.write(
      [
        `repository ${repo}: ${workspace.files} files, ${mb(workspace.bytes)} (its own .git: ${mb(userGit)}, not stored)`,
        `store after the first checkpoint: ${mb(afterFirst)} on disk (${((afterFirst / workspace.bytes) * 100).toFixed(0)}% of the workspace)`,
        `store after ${k} checkpoints: ${mb(afterK)} on disk; each later one adds ${(result.bytesPerLaterCheckpoint / 1024).toFixed(0)} KB`,
        `the same ${k} checkpoints packed (git repack -ad): ${mb(packed)} (${((packed / workspace.bytes) * 100).toFixed(0)}% of the workspace)`,
        `checkpoint time: first ${result.firstCheckpointMs} ms, later ones ${result.laterCheckpointMedianMs} ms (median)`,
        `restore to the first checkpoint: ${result.restoreToFirstMs} ms (size matches: ${restoredSame})`,
      ].join('\n') + '\n',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:checkpoints: ${(err as Error).message}\n`);
  process.exit(1);
});
