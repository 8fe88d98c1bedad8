/** Settings read from the environment: a bad value fails loudly, naming the variable, the value and what is allowed. */
import { LOG_LEVELS, logLevel } from '../../src/settings';

describe('logLevel (AGENT_JOBS_LOG_LEVEL)', () => {
  test('INFO when unset or empty', () => {
    expect(logLevel({})).toBe('INFO');
    expect(logLevel({ AGENT_JOBS_LOG_LEVEL: '' })).toBe('INFO');
  });

  test.each(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'])('%s, in any case, is the SDK level of that name', (level) => {
    expect(logLevel({ AGENT_JOBS_LOG_LEVEL: level.toLowerCase() })).toBe(level);
    expect(logLevel({ AGENT_JOBS_LOG_LEVEL: ` ${level} ` })).toBe(level);
  });

  test('the allowed values are exactly the SDK LogLevel values', () => {
    expect([...LOG_LEVELS]).toEqual(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']);
  });

  test.each(['verbose', 'WARNING', 'info,debug', '3'])(
    '%j is refused: the error names the variable, the value and the allowed values',
    (value) => {
      expect(() => logLevel({ AGENT_JOBS_LOG_LEVEL: value })).toThrow(
        new Error(`AGENT_JOBS_LOG_LEVEL must be one of TRACE, DEBUG, INFO, WARN, ERROR (any case), not ${JSON.stringify(value)}`),
      );
    },
  );
});
