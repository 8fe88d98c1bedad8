/**
 * The tests of a file that holds fast and slow ones (test/slow-suites.js `MIXED_FILES`): `slowDescribe`/`slowTest`
 * run under `AGENT_JOBS_SLOW_TESTS=1` or `only`, `fastDescribe` under anything but `only`, so that `npm test` and
 * `.ci/run`'s second step never run the same test twice.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { SLOW_MODE } = require('./slow-suites') as { SLOW_MODE: 'skip' | 'all' | 'only' };

/** Whether the slow tests run here. */
export const slowAsked = SLOW_MODE !== 'skip';
/** `describe` for slow tests: skipped unless asked. */
export const slowDescribe = slowAsked ? describe : describe.skip;
/** `test` for a slow test: skipped unless asked. */
export const slowTest = slowAsked ? test : test.skip;
/** Whether the fast tests of a mixed file run here (all but `AGENT_JOBS_SLOW_TESTS=only`). */
export const fastAsked = SLOW_MODE !== 'only';
/** `describe` for the fast tests of a mixed file: skipped when only the slow suites run. */
export const fastDescribe = fastAsked ? describe : describe.skip;
/** `test` for a fast test of a mixed file: skipped when only the slow suites run. */
export const fastTest = fastAsked ? test : test.skip;
