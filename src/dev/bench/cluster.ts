/**
 * `npm run bench:cluster -- [--runs 500] [--turns 10] [--workers 3]
 * [--baseline dev|none] [--keep] [--json]`: the scale-out figure. On the
 * local Temporal cluster (`npm run cluster`; started when none runs, and
 * then stopped at the end unless `--keep`), N runs × T turns at once
 * spread over W worker processes, connected round-robin to the cluster's
 * frontends ({@link runMany} with several workers): completion, turns/s,
 * and per worker the runs, sessions, workflow tasks, model calls and
 * commands it took (from the runs' histories) and its peak RSS. Then, with
 * `--baseline dev` (the default), the same N × T in the same invocation on
 * a dev server of its own (SQLite) with one worker, the setup of `npm run
 * bench:many`. Beside each it prints the 1-minute load average sampled
 * while it ran (other jobs on the machine move turns/s a lot).
 */
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import Table from 'cli-table3';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runMany, type ManyReport } from './many';
import { clusterTarget } from '../testing/cluster-target';
import { serverInfo, type ServerInfo } from '../testing/target';

/** One measured part: the many-runs figures, where, and the machine's load meanwhile. */
export interface ScaleOutPart {
  where: 'cluster' | 'dev-server';
  workers: number;
  server: ServerInfo | null;
  /** 1-minute load average, sampled every 5 s while it ran: mean and highest. */
  loadAverage: { mean: number; max: number };
  report: ManyReport;
}

/** What `bench:cluster` measured. */
export interface ScaleOutReport {
  runs: number;
  turns: number;
  cluster: ScaleOutPart;
  /** `null` with `--baseline none`. */
  baseline: ScaleOutPart | null;
  /** Cores of the machine, for reading the load average. */
  cores: number;
}

/** Runs `fn` while sampling the 1-minute load average every 5 s. */
async function underLoad<T>(fn: () => Promise<T>): Promise<{ value: T; loadAverage: ScaleOutPart['loadAverage'] }> {
  const samples = [loadavg()[0]!];
  let going = true;
  const sampler = (async () => {
    while (going) {
      await sleep(5_000);
      samples.push(loadavg()[0]!);
    }
  })();
  try {
    return {
      value: await fn(),
      loadAverage: {
        mean: Math.round((samples.reduce((a, b) => a + b, 0) / samples.length) * 10) / 10,
        max: Math.round(Math.max(...samples) * 10) / 10,
      },
    };
  } finally {
    going = false;
    await sampler.catch(() => undefined);
  }
}

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('a positive integer');
  return Number(value);
}

/** The two parts side by side, then the cluster's per-worker shares. */
export function formatScaleOut(r: ScaleOutReport): string {
  const plain = !process.stdout.isTTY;
  const style = plain ? { style: { head: [], border: [] } } : {};
  const parts = [r.cluster, ...(r.baseline ? [r.baseline] : [])];
  const head = (p: ScaleOutPart): string =>
    `${p.where === 'cluster' ? 'cluster' : 'dev server'}, ${p.workers} worker${p.workers === 1 ? '' : 's'}` +
    (p.server ? ` (${p.server.persistenceStore})` : '');
  const t = new Table({ head: [`${r.runs} runs × ${r.turns} turns`, ...parts.map(head)], ...style });
  const row = (label: string, f: (p: ScaleOutPart) => string | number): void => void t.push([label, ...parts.map((p) => String(f(p)))]);
  row('completed / failed', (p) => `${p.report.completed} / ${p.report.failed}`);
  row('wall time', (p) => `${p.report.seconds} s`);
  row('turns per second', (p) => p.report.turnsPerSecond);
  row('peak worker RSS (highest worker)', (p) => `${p.report.peakWorkerRssMb} MiB`);
  row('most sessions on one worker', (p) => p.report.peakSessions);
  row('sessions that waited for room', (p) => p.report.sessionsThatWaited);
  row('workflow tasks: completed / timeouts recorded (sticky wait, processing)', (p) => {
    const w = p.report.workflowTasks;
    return `${w.completed} / ${w.scheduleToStartTimeouts}, ${w.startToCloseTimeouts}`;
  });
  row('child processes: peak count, RSS', (p) => `${p.report.peakChildren}, ${p.report.peakChildrenRssMb} MiB`);
  row(`load average, 1 min (${r.cores} cores): mean / max`, (p) => `${p.loadAverage.mean} / ${p.loadAverage.max}`);
  const w = new Table({
    head: [
      'cluster worker',
      'frontend',
      'runs',
      'sessions',
      'most at once',
      'workflow tasks',
      'model calls',
      'commands',
      'RSS idle / peak',
    ],
    ...style,
  });
  for (const x of r.cluster.report.perWorker)
    w.push([
      x.workerId,
      x.frontend,
      x.runs,
      x.sessions,
      x.peakSessions,
      x.workflowTasks,
      x.modelCalls,
      x.commands,
      `${x.idleRssMb} / ${x.peakRssMb} MiB`,
    ]);
  const failures = parts.flatMap((p) => p.report.failures.slice(0, 5).map((f) => `${p.where}: not completed: ${f}`));
  return `${[t.toString(), w.toString(), ...failures].join('\n')}\n`;
}

async function main(): Promise<void> {
  const o = new Command('bench:cluster')
    .description('many runs over several workers on the local Temporal cluster, beside one worker on a dev server')
    .option('--runs <n>', 'runs started at once', positiveInt, 500)
    .option('--turns <n>', 'commands per run', positiveInt, 10)
    .option('--workers <n>', 'worker processes on the cluster', positiveInt, 3)
    .addOption(
      new Option('--baseline <kind>', 'also measure on a dev server with one worker, or not').choices(['dev', 'none']).default('dev'),
    )
    .option('--keep', 'leave a cluster this command started running')
    .option('--json', 'print JSON')
    .parse(process.argv)
    .opts<{ runs: number; turns: number; workers: number; baseline: 'dev' | 'none'; keep?: boolean; json?: boolean }>();
  const say = (line: string): void => void process.stderr.write(`bench:cluster: ${line}\n`);
  const target = await clusterTarget({ say });
  let cluster: ScaleOutPart;
  try {
    say(`${o.runs} runs × ${o.turns} turns over ${o.workers} workers on the cluster (${target.addresses.join(', ')})`);
    const measured = await underLoad(() =>
      runMany({
        runs: o.runs,
        turns: o.turns,
        workers: o.workers,
        address: target.addresses[0]!,
        workerAddresses: target.addresses,
        namespace: target.namespace,
        verbose: !o.json,
      }),
    );
    cluster = { where: 'cluster', workers: o.workers, server: await target.info().catch(() => null), ...measured, report: measured.value };
  } finally {
    await target.close({ keep: o.keep === true });
  }
  let baseline: ScaleOutPart | null = null;
  // The cluster's figures now: the baseline may take as long again.
  if (!o.json) process.stdout.write(formatScaleOut({ runs: o.runs, turns: o.turns, cluster, baseline, cores: cpus().length }));
  if (o.baseline === 'dev') {
    say(`the same ${o.runs} runs × ${o.turns} turns on a dev server with one worker`);
    let info: ServerInfo | null = null;
    const measured = await underLoad(() =>
      runMany({
        runs: o.runs,
        turns: o.turns,
        verbose: !o.json,
        onServer: async (address) => void (info = await serverInfo(address).catch(() => null)),
      }),
    );
    baseline = { where: 'dev-server', workers: 1, server: info, ...measured, report: measured.value };
  }
  const report: ScaleOutReport = { runs: o.runs, turns: o.turns, cluster, baseline, cores: cpus().length };
  process.stdout.write(o.json ? `${JSON.stringify(report, null, 2)}\n` : formatScaleOut(report));
  if (cluster.report.failed > 0 || (baseline?.report.failed ?? 0) > 0) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:cluster: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
