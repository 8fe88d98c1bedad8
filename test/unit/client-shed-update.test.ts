/**
 * Which server refusals of an Update the agent-jobs client sends again
 * (src/client.ts `isShedUpdate`): only those that come before the run saw the
 * Update, so nothing was applied. Messages as Temporal 1.32 sends them.
 */
import { ServiceError } from '@temporalio/client';
import { isShedUpdate } from '../../src/client';

/** The client's error for a gRPC failure `code` with `details`, as executeUpdate throws it. */
function refused(code: number, details: string): ServiceError {
  const cause = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: { get: () => [] } });
  return new ServiceError('Workflow Update failed', { cause });
}

test('too many Updates in flight on the run, and an Update aborted with the run registry, are shed', () => {
  expect(isShedUpdate(refused(8, 'limit on number of concurrent in-flight updates has been reached (10)'))).toBe(true);
  expect(isShedUpdate(refused(14, 'workflow update was aborted'))).toBe(true);
});

test('what is not a shed Update is not sent again', () => {
  // The run closed: a resend would not be answered by the run.
  expect(isShedUpdate(refused(5, 'workflow update was aborted by closing workflow'))).toBe(false);
  // A server that does not answer, and another limit: the caller hears of them.
  expect(isShedUpdate(refused(14, 'connection refused'))).toBe(false);
  expect(isShedUpdate(refused(8, 'namespace rate limit exceeded'))).toBe(false);
  expect(isShedUpdate(new Error('workflow update was aborted'))).toBe(false);
  expect(isShedUpdate(undefined)).toBe(false);
});
