/**
 * Benchmark of the bash session: round trip of a command through
 * the persistent session versus a new `bash -c` process per command (execa),
 * in the same run, plus the memory of one idle session.
 *
 * Usage: npm run build && node dist/dev/bench/session.js [--json] [--iterations N]
 *
 * Commands (the same text for both ways; all bash builtins, so the figures
 * measure the round trip and the output path, not the start of other programs):
 * - `true`: nothing printed;
 * - 1 KB:  `printf '%01023d\n' 0` (1024 bytes);
 * - 1 MB:  `printf '%01048575d\n' 0` (1 MiB; capped to 30 KB in the session's
 *   result, as the agent sees it; execa returns all of it).
 *
 * Target: `true` median <= 2 ms and <= 0.5 x spawn-per-command.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Table from 'cli-table3';
import { execa } from '../testing/exec';
import { BashSession } from '../../session';

interface Case {
  name: string;
  command: string;
  /** Bytes the command prints. */
  bytes: number;
}

const CASES: Case[] = [
  { name: 'true', command: 'true', bytes: 0 },
  { name: 'print 1 KB', command: "printf '%01023d\\n' 0", bytes: 1024 },
  { name: 'print 1 MB', command: "printf '%01048575d\\n' 0", bytes: 1024 * 1024 },
];

/** Summary of one series of timings, ms. */
export interface Stats {
  n: number;
  medianMs: number;
  p95Ms: number;
  minMs: number;
  meanMs: number;
}

/** One row of the report. */
export interface CaseResult {
  name: string;
  command: string;
  session: Stats;
  spawn: Stats;
  /** session median / spawn median. */
  ratio: number;
}

/** What `--json` prints. */
export interface BenchReport {
  iterations: number;
  node: string;
  bash: string;
  cpus: number;
  processGuard: string;
  cases: CaseResult[];
  /** Resident memory of the idle session's bash process, MB (VmRSS). */
  idleSessionRssMb: number;
  target: { trueMedianMs: number; maxRatio: number; met: boolean };
}

function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  return {
    n: s.length,
    medianMs: round(at(0.5)),
    p95Ms: round(at(0.95)),
    minMs: round(s[0]!),
    meanMs: round(s.reduce((a, b) => a + b, 0) / s.length),
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

async function timeSession(session: BashSession, c: Case, iterations: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t = nowMs();
    const r = await session.run(c.command);
    out.push(nowMs() - t);
    if (r.exitCode !== 0 || r.outputBytes !== c.bytes)
      throw new Error(`session: ${c.name} gave exit ${r.exitCode}, ${r.outputBytes} bytes`);
  }
  return out;
}

async function timeSpawn(c: Case, iterations: number, cwd: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t = nowMs();
    const r = await execa('bash', ['-c', c.command], { all: true, reject: false, cwd, stdin: 'ignore' });
    out.push(nowMs() - t);
    if (r.exitCode !== 0 || Buffer.byteLength(r.all ?? '') + (c.bytes > 0 ? 1 : 0) < c.bytes)
      throw new Error(`spawn: ${c.name} gave exit ${r.exitCode}`);
  }
  return out;
}

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round((Number(m[1]) / 1024) * 100) / 100 : NaN;
}

function parseArgs(argv: string[]): { json: boolean; iterations: number } {
  let json = false;
  let iterations = 200;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') json = true;
    else if (a === '--iterations' || a.startsWith('--iterations=')) {
      const v = a.includes('=') ? a.split('=')[1] : argv[++i];
      iterations = Number(v);
      if (!Number.isInteger(iterations) || iterations < 5) throw new Error(`--iterations: expected an integer >= 5, got ${String(v)}`);
    } else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node dist/dev/bench/session.js [--json] [--iterations N]  (default 200)\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (try --help)`);
  }
  return { json, iterations };
}

/** Runs the benchmark and returns the report. */
export async function runSessionBench(iterations: number): Promise<BenchReport> {
  // Its own directory as the workspace: the sandbox's /tmp is private, so a cwd there would not be bash's.
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-jobs-bench-session-'));
  const session = await BashSession.start({ cwd, workspace: cwd });
  try {
    const cases: CaseResult[] = [];
    for (const c of CASES) {
      const n = c.bytes >= 1024 * 1024 ? Math.max(5, Math.floor(iterations / 4)) : iterations;
      // warm-up (page cache, JIT), not measured
      await timeSession(session, c, 5);
      await timeSpawn(c, 5, cwd);
      const sessionTimes = await timeSession(session, c, n);
      const spawnTimes = await timeSpawn(c, n, cwd);
      const s = stats(sessionTimes);
      const p = stats(spawnTimes);
      cases.push({ name: c.name, command: c.command, session: s, spawn: p, ratio: round(s.medianMs / p.medianMs) });
    }
    await sleep(200);
    const idleSessionRssMb = rssMb(session.pid);
    const bash = (await execa('bash', ['-c', 'echo "$BASH_VERSION"'])).stdout;
    const t = cases[0]!;
    return {
      iterations,
      node: process.version,
      bash,
      cpus: os.cpus().length,
      processGuard: session.guardKind,
      cases,
      idleSessionRssMb,
      target: { trueMedianMs: 2, maxRatio: 0.5, met: t.session.medianMs <= 2 && t.ratio <= 0.5 },
    };
  } finally {
    await session.close();
    fs.rmSync(cwd, { recursive: true, force: true });
  }
}

function printTable(r: BenchReport): void {
  const table = new Table({
    head: ['command', 'session median ms', 'session p95 ms', 'bash -c median ms', 'bash -c p95 ms', 'session / bash -c'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right'],
    style: { head: [], border: [] },
  });
  for (const c of r.cases) {
    table.push([
      c.name,
      c.session.medianMs.toFixed(3),
      c.session.p95Ms.toFixed(3),
      c.spawn.medianMs.toFixed(3),
      c.spawn.p95Ms.toFixed(3),
      `${c.ratio.toFixed(2)}x`,
    ]);
  }
  process.stdout.write(
    `bash session benchmark: ${r.iterations} iterations (1 MB: ${Math.max(5, Math.floor(r.iterations / 4))}), node ${r.node}, bash ${r.bash}, ${r.cpus} CPUs, process guard ${r.processGuard}\n`,
  );
  process.stdout.write(table.toString() + '\n');
  process.stdout.write(`idle session RSS (bash): ${r.idleSessionRssMb} MB\n`);
  process.stdout.write(
    `target (true median <= ${r.target.trueMedianMs} ms and <= ${r.target.maxRatio}x bash -c): ${r.target.met ? 'met' : 'NOT met'}\n`,
  );
}

async function main(): Promise<void> {
  const { json, iterations } = parseArgs(process.argv.slice(2));
  const report = await runSessionBench(iterations);
  if (json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  else printTable(report);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:session failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.stderr.write('check that bash is on PATH and that the build is current (npm run build)\n');
    process.exitCode = 1;
  });
}
