/**
 * `npm run test:cluster [-- --json] [--keep]`: the end-to-end cases that
 * matter at cluster scale, against the local Temporal cluster of `npm run
 * cluster` (two server processes on PostgreSQL). Starts the cluster when
 * none runs (and says so), and stops it at the end unless `--keep`; leaves
 * one it found running. Runs each case of src/dev/cluster-test/cases.ts, then
 * prints a table of pass/fail and figures (`--json`: JSON) and the
 * persistence store the server reports through `GetClusterInfo`, which
 * must be PostgreSQL. Exits non-zero when any case fails or the store is
 * not PostgreSQL.
 *
 * `--dev-server` runs the same cases on a dev server of its own instead
 * (one server process, SQLite): to try them without a cluster. Its store
 * check fails, as it should.
 */
import Table from 'cli-table3';
import { Command } from 'commander';
import { approvalCase, chaosCase, crashResumeCase, multiTurnCase, rollingRestartCase, type CaseResult } from './cases';
import { devServerTarget, type ServerInfo, type Target } from '../testing/target';
import { clusterTarget } from '../testing/cluster-target';

/** What `test:cluster` measured. */
export interface ClusterTestReport {
  target: { kind: Target['kind']; addresses: string[]; namespace: string; startedHere: boolean };
  server: ServerInfo | null;
  /** Whether {@link server} names a PostgreSQL store. */
  postgres: boolean;
  cases: CaseResult[];
  passed: boolean;
  /** Wall time of the whole command, seconds (cluster start included when it started one). */
  seconds: number;
}

/** The cases, by the name `--only` takes. */
const CASES: Record<string, (t: Target, verbose: boolean) => Promise<CaseResult>> = {
  turns: (t) => multiTurnCase(t),
  approval: (t) => approvalCase(t),
  crash: (t) => crashResumeCase(t),
  chaos: (t, verbose) => chaosCase(t, { verbose }),
  rolling: (t, verbose) => rollingRestartCase(t, { verbose }),
};

/**
 * Runs the cases named in `only` (all, in order, by default) on `target`
 * and asks the server what it is.
 */
export async function runClusterTest(
  target: Target,
  o: { only?: string[]; say?: (line: string) => void } = {},
): Promise<ClusterTestReport> {
  const started = Date.now();
  const say = o.say ?? (() => {});
  const server = await target.info().catch((err: unknown) => {
    say(`GetClusterInfo failed: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  });
  const cases: CaseResult[] = [];
  for (const name of o.only ?? Object.keys(CASES)) {
    say(`case ${name}…`);
    const r = await CASES[name]!(target, o.say !== undefined);
    say(`case ${name}: ${r.passed ? 'passed' : 'FAILED'} in ${r.seconds} s`);
    cases.push(r);
  }
  const postgres = /postgres/i.test(server?.persistenceStore ?? '');
  return {
    target: { kind: target.kind, addresses: target.addresses, namespace: target.namespace, startedHere: target.startedHere },
    server,
    postgres,
    cases,
    passed: postgres && cases.every((c) => c.passed),
    seconds: Math.round((Date.now() - started) / 100) / 10,
  };
}

/** The report as a table and lines for people. */
export function formatReport(r: ClusterTestReport): string {
  const plain = !process.stdout.isTTY;
  const table = new Table({ head: ['case', 'result', 'seconds', 'figures'], ...(plain ? { style: { head: [], border: [] } } : {}) });
  for (const c of r.cases)
    table.push([
      c.name,
      c.passed ? 'pass' : 'FAIL',
      c.seconds,
      Object.entries(c.figures)
        .map(([k, v]) => `${k} ${v}`)
        .join('\n'),
    ]);
  const lines = [table.toString()];
  for (const c of r.cases) for (const p of c.problems) lines.push(`${c.name}: ${p}`);
  const s = r.server;
  lines.push(
    `server: ${s ? `Temporal ${s.serverVersion}, cluster ${s.clusterName}, persistence ${s.persistenceStore}, visibility ${s.visibilityStore}, ${s.historyShardCount} history shards` : 'GetClusterInfo did not answer'}` +
      ` (${r.target.kind}, frontends ${r.target.addresses.join(', ')}, namespace ${r.target.namespace})`,
    r.postgres ? 'persistence store: PostgreSQL' : `persistence store is not PostgreSQL: ${s?.persistenceStore ?? 'unknown'}`,
    `${r.passed ? 'passed' : 'FAILED'}: ${r.cases.filter((c) => c.passed).length} of ${r.cases.length} cases in ${r.seconds} s`,
  );
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const o = new Command('test:cluster')
    .description(
      'end-to-end cases on the local Temporal cluster (npm run cluster): multi-turn, approval, crash resume, chaos, rolling restart',
    )
    .option('--json', 'print JSON')
    .option('--keep', 'leave a cluster this command started running')
    .option('--dev-server', 'run the cases on a dev server of its own instead (the PostgreSQL check then fails)')
    .option('--only <cases>', `comma-separated cases to run: ${Object.keys(CASES).join(', ')}`, (v) => v.split(','))
    .parse(process.argv)
    .opts<{ json?: boolean; keep?: boolean; devServer?: boolean; only?: string[] }>();
  const unknown = (o.only ?? []).filter((n) => !(n in CASES));
  if (unknown.length > 0) throw new Error(`unknown case(s) ${unknown.join(', ')}; the cases: ${Object.keys(CASES).join(', ')}`);
  const say = (line: string): void => void process.stderr.write(`test:cluster: ${line}\n`);
  const started = Date.now();
  const target = o.devServer ? await devServerTarget() : await clusterTarget({ say });
  try {
    const report = await runClusterTest(target, { ...(o.only ? { only: o.only } : {}), ...(o.json ? {} : { say }) });
    report.seconds = Math.round((Date.now() - started) / 100) / 10;
    process.stdout.write(o.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    if (!report.passed) process.exitCode = 1;
  } finally {
    await target.close({ keep: o.keep === true });
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`test:cluster: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
