/**
 * `npm run bench -- [--long N] [--many N] [--json]`: the long-run figures and the
 * many-runs figures, in one run on one dev server (src/dev/bench/long.ts, src/dev/bench/many.ts):
 * history bytes per turn early and late, continue-as-new segments, the largest payload,
 * the prompt-cache read share, Claude-visible context per turn; and, for N concurrent runs
 * × 10 turns on one worker, completion, turns/s and worker RSS per session. Beside each
 * figure it prints what the same measurement gave before this code (the baseline column,
 * measured on main at 1d94e65 on the same machine kind) and the target.
 */
import { Command, InvalidArgumentError } from 'commander';
import { startDevServerOnFreePort } from '../devserver';
import { measureLong, printLong, type LongFigures } from './long';
import { runMany, type ManyReport } from './many';

/** Before this code, measured on main (1d94e65): 300 turns of 20 KB outputs, and 100 runs × 10 turns on one worker. */
export const BASELINE = {
  historyBytesPerTurn: 253 * 1024,
  segmentsFor300Turns: 32,
  cacheReadShare: 0,
  manyRuns: 100,
  manyTurnsPerSecond: 38.6,
  manyPeakRssMb: 527,
} as const;

function count(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('a whole number (0 skips that part)');
  return Number(value);
}

/** The side-by-side lines for the figures measured. */
export function compare(long: LongFigures | null, many: ManyReport | null): string[] {
  const kb = (b: number): string => `${(b / 1024).toFixed(1)} KB`;
  const lines = ['figure | now | before (main 1d94e65) | target'];
  if (long) {
    lines.push(
      `history bytes per turn (${long.turns} turns × ${kb(long.outputBytes)}) | ${kb(long.historyBytesPerTurn.all.median)}; late/early ${long.historyBytesPerTurn.ratio}× | ${kb(BASELINE.historyBytesPerTurn)}; 43 KB before today's API (issue 19) | ≤ 1.5 × 43 KB, late/early ≤ 1.5×`,
      `continue-as-new segments | ${long.segments} | ${BASELINE.segmentsFor300Turns} for 300 turns | as few as the history limits need`,
      `largest payload | ${kb(long.largestPayload.bytes)} | — | far below 2 MB`,
      `input tokens read from the prompt cache after turn 2 | ${(long.cacheReadShare * 100).toFixed(1)} % | 0 % | ≥ 90 %`,
      `Claude-visible context | up to ${long.contextTokens.max} tokens, cleared at ${long.clearedAtTurns.length} turns | ~200,000 characters | the whole conversation until the window nears`,
      `${long.model ?? '?'} on the scripted server's ${long.api ?? '?'} API, window ${long.contextWindow ?? '?'} | ${long.status}; ${long.refused ?? '?'} requests refused; ${long.compactions.count} compactions; $${long.costUsd ?? '?'} | — | completed, zero 400s`,
    );
  }
  if (many) {
    lines.push(
      `${many.runs} concurrent runs × ${many.turns} turns, one worker | ${many.completed}/${many.runs} completed, ${many.turnsPerSecond} turns/s, peak RSS ${many.peakWorkerRssMb} MiB, ${many.rssPerSessionMb} MiB per session | ${BASELINE.manyRuns} runs: all completed, ${BASELINE.manyTurnsPerSecond} turns/s, ${BASELINE.manyPeakRssMb} MB peak RSS | 200 runs complete; ≤ 10 MB per session`,
    );
  }
  return lines;
}

async function main(): Promise<void> {
  const o = new Command('bench')
    .option('--long <turns>', 'turns of the long run (0 skips it)', count, 300)
    .option('--many <runs>', 'concurrent runs of 10 turns on one worker (0 skips it)', count, 200)
    .option('--json', 'print JSON')
    .parse(process.argv)
    .opts<{ long: number; many: number; json?: boolean }>();
  const server = await startDevServerOnFreePort({ headless: true });
  try {
    const long = o.long > 0 ? await measureLong({ turns: o.long, outputBytes: 20_000, address: server.address }) : null;
    const many = o.many > 0 ? await runMany({ runs: o.many, turns: 10, address: server.address }) : null;
    if (o.json) return void process.stdout.write(`${JSON.stringify({ long, many, baseline: BASELINE }, null, 2)}\n`);
    if (long) process.stdout.write(`${printLong(long)}\n\n`);
    process.stdout.write(`${compare(long, many).join('\n')}\n`);
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
