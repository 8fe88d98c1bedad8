/**
 * Reading the `.cpuprofile` files a worker started with `node --cpu-prof`
 * writes when it exits (one per thread: the main thread and the workflow
 * thread), for `bench:turns --cpu-prof DIR`: where a run's worker CPU went,
 * per function, counted only between the run's start and its end.
 *
 * The format is V8's (`Profiler.Profile` of the DevTools protocol): a call
 * tree of `nodes` (each with a `callFrame` and its `children` ids), and
 * `samples` (the node on top of the stack at each tick) with `timeDeltas`
 * (µs since the previous sample, the first since `startTime`). Times are
 * µs of the same monotonic clock as `process.hrtime` (CLOCK_MONOTONIC on
 * Linux), so a window taken with `process.hrtime.bigint()` in another
 * process selects the samples in it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** One call frame of a profile node. */
export interface CallFrame {
  functionName: string;
  url: string;
  /** 0-based. */
  lineNumber: number;
}

/** A V8 CPU profile, the fields read here. */
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  /** µs, monotonic clock. */
  startTime: number;
  endTime: number;
  samples: number[];
  /** µs; `timeDeltas[i]` is the time from the previous sample (or `startTime`) to sample `i`. */
  timeDeltas: number[];
}

/** One function's time in the window. */
export interface FunctionTime {
  /** `name file:line` (the file relative to node_modules or the checkout). */
  where: string;
  /** Time on top of the stack (self) or anywhere in it (total), ms per turn. */
  msPerTurn: number;
  /** That time as a share (0..1) of the process's CPU time in the window. */
  share: number;
}

/** What {@link summarizeProfiles} found. */
export interface ProfileSummary {
  /** Sampled time in the window that was not `(idle)`, ms, all threads. */
  sampledMs: number;
  /** The functions with the most self time, most first. */
  self: FunctionTime[];
  /** The same for time anywhere in the stack (a function counted once per sample however often it recurs). */
  total: FunctionTime[];
}

/** Every `.cpuprofile` in `dir`, parsed. */
export function readProfiles(dir: string): CpuProfile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as CpuProfile);
}

const where = (cf: CallFrame): string =>
  `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(dist|src)\//, '$1/')}:${cf.lineNumber + 1}`;

/**
 * Self and total time per function over the samples of `profiles` that
 * fall in `window` (µs, inclusive), as ms per turn and as a share of
 * `cpuMs`, the process's CPU time (user + system) in that window. A sample
 * stands for the time until the next one (the last one for nothing);
 * `(idle)` samples are left out. V8 samples wall time on a thread that is
 * not idle, so a thread blocked in a native call counts: the shares are
 * approximate, and `sampledMs` may exceed `cpuMs`.
 * @param top how many functions each list keeps. @default 20
 */
export function summarizeProfiles(
  profiles: CpuProfile[],
  window: { fromUs: number; toUs: number },
  cpuMs: number,
  turns: number,
  top = 20,
): ProfileSummary {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let sampled = 0;
  for (const p of profiles) {
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    let t = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i] ?? 0;
      const dt = p.timeDeltas[i + 1] ?? 0;
      const node = byId.get(p.samples[i]!);
      if (!node || t < window.fromUs || t > window.toUs || node.callFrame.functionName === '(idle)') continue;
      sampled += dt;
      const key = where(node.callFrame);
      self.set(key, (self.get(key) ?? 0) + dt);
      const seen = new Set<string>();
      for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
        const k = where(byId.get(id)!.callFrame);
        if (seen.has(k) || k.startsWith('(root)')) continue;
        seen.add(k);
        total.set(k, (total.get(k) ?? 0) + dt);
      }
    }
  }
  const list = (m: Map<string, number>): FunctionTime[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([w, us]) => ({ where: w, msPerTurn: Math.round((us / 1000 / turns) * 100) / 100, share: cpuMs > 0 ? us / 1000 / cpuMs : 0 }));
  return { sampledMs: Math.round(sampled / 1000), self: list(self), total: list(total) };
}
