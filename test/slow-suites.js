/**
 * The slow suites: what `npm test` leaves out by default, and `.ci/run` runs as a second step (docs/development.md,
 * "Slow suites"). `AGENT_JOBS_SLOW_TESTS` says which part of the suite runs:
 * - unset or `0`: all but the slow suites (`npm test`, the README's command);
 * - `1`: everything, in one run;
 * - `only`: the slow suites alone (`.ci/run` after `npm test`, so that each of the two is timed on its own).
 * Whole files are chosen by path ({@link SLOW_FILES}, jest.config.js `testPathIgnorePatterns`); a file of
 * {@link MIXED_FILES} holds fast and slow tests and picks its own with test/slow.ts.
 * Any other value is refused, so that a typo does not silently run the wrong part.
 */
const mode = process.env.AGENT_JOBS_SLOW_TESTS ?? '';
if (!['', '0', '1', 'only'].includes(mode)) {
  throw new Error(`AGENT_JOBS_SLOW_TESTS=${mode}: expected 1 (everything), only (the slow suites) or nothing (all but them)`);
}
/** `skip` (default), `all` or `only`. */
const SLOW_MODE = mode === '1' ? 'all' : mode === 'only' ? 'only' : 'skip';

/**
 * Files that are slow as a whole (regular expressions on the absolute path). The adversary rounds: every attack
 * a past adversary round found, as written then (one file a round; 24 of them took 370 s of a quiet CI run's 2,264 s of file time); the
 * protections they prove have tests of their own that `npm test` runs. The cluster: it builds the Temporal server
 * from Go (6 to 24 minutes; 42 s with the build cached). The soak runs: chaos (worker kills and a server restart
 * over 4 runs) and the rolling restart of 3 workers under load, about 42 s each in a CI run; the faults they combine
 * have tests of their own in `npm test` (crash, faults, shutdown). The big workspace (big-workspace.test.ts): a repository
 * of 30,000 git-ignored files made, granted, opened and checkpointed (166 s at load ~18, 25 s at load 4).
 */
const SLOW_FILES = [
  '/test/unit/attack/adversary-round[^/]*\\.test\\.ts$',
  '/test/integration/cluster\\.test\\.ts$',
  '/test/integration/chaos\\.test\\.ts$',
  '/test/integration/rolling-restart\\.test\\.ts$',
  '/test/unit/activities/big-workspace\\.test\\.ts$',
];

/**
 * Files that hold both: ESLint over the project (lint.test.ts), the replays in another time zone (replay.test.ts), the
 * index audit's bound on the size of the index (index-audit.test.ts: a million staged entries, about 40 s in CI), and
 * the bounds of the ignored-files walk and of the nested repositories, each passed by making what it bounds:
 * ignored-audit.test.ts and nested-audit.test.ts (100,100 ignored entries; 33 nested repositories for the audit's 32),
 * nested-repos.test.ts (67 nested repositories for the guard's 64). docs/development.md, "Slow suites", says why each.
 */
const MIXED_FILES = [
  '/test/unit/tooling/lint\\.test\\.ts$',
  '/test/unit/workflows/replay\\.test\\.ts$',
  '/test/unit/attack/index-audit\\.test\\.ts$',
  '/test/unit/attack/ignored-audit\\.test\\.ts$',
  '/test/unit/attack/nested-audit\\.test\\.ts$',
  '/test/unit/attack/nested-repos\\.test\\.ts$',
];

/** What each jest project ignores in this mode, besides node_modules. */
function ignoredPaths() {
  if (SLOW_MODE === 'all') return ['/node_modules/'];
  if (SLOW_MODE === 'skip') return ['/node_modules/', ...SLOW_FILES];
  // Everything that is neither slow nor mixed: one pattern with a negative lookahead.
  return ['/node_modules/', `^(?!.*(?:${[...SLOW_FILES, ...MIXED_FILES].map((p) => p.replace(/\$$/, '')).join('|')})$)`];
}

module.exports = { SLOW_MODE, SLOW_FILES, MIXED_FILES, ignoredPaths };
