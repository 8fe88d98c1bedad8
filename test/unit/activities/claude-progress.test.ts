import { PARTIAL_TEXT_MAX_CHARS, tailOf } from '../../../src/activities/claude-progress';

describe('tailOf: the bounded partial text of a heartbeat', () => {
  test('keeps short text whole and the last PARTIAL_TEXT_MAX_CHARS characters of long text', () => {
    expect(tailOf('hello')).toBe('hello');
    const long = `${'a'.repeat(5_000)}END`;
    expect(tailOf(long)).toHaveLength(PARTIAL_TEXT_MAX_CHARS);
    expect(tailOf(long).endsWith('aEND')).toBe(true);
  });

  test('never starts with half of a surrogate pair', () => {
    // '🚀' is two UTF-16 code units: a cut between them drops the orphaned half.
    expect(tailOf('x🚀yz', 4)).toBe('🚀yz');
    expect(tailOf('🚀yz', 3)).toBe('yz');
  });
});
