/**
 * Copies that must exist: the session library keeps its own defaults for
 * direct use (it knows nothing of Temporal or src/config.ts); they must
 * equal the product's, or a command run through the library alone behaves
 * differently from one run by a worker.
 */
import { DEFAULT_COMMAND_TIMEOUT_MS } from '../../src/config';
import { DEFAULT_TIMEOUT_MS } from '../../src/session/session';

test('the session library default command timeout is the product default', () => {
  expect(DEFAULT_TIMEOUT_MS).toBe(DEFAULT_COMMAND_TIMEOUT_MS);
});
