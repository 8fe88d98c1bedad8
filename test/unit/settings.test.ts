/** Settings read from the environment: a bad value fails loudly, naming the variable, the value and what is allowed. */
import {
  COMMAND_TIMEOUT_SLACK_MS,
  DEFAULT_COMMAND_TIMEOUT_MS,
  MAX_DEFAULT_MAX_SESSIONS,
  MAX_SHUTDOWN_GRACE_MS,
  MIN_DEFAULT_MAX_SESSIONS,
  SESSION_MEMORY_ALLOWANCE_BYTES,
  SHUTDOWN_FORCE_TIME_MS,
} from '../../src/config';
import {
  defaultMaxSessions,
  LOG_LEVELS,
  logLevel,
  machineCapacity,
  maxSessions,
  shutdownGraceMs,
  type MachineCapacity,
} from '../../src/settings';

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

describe('maxSessions (AGENT_JOBS_MAX_SESSIONS)', () => {
  const GiB = 1024 ** 3;
  const machine = (o: Partial<MachineCapacity> = {}): MachineCapacity => ({
    totalMemoryBytes: 64 * GiB,
    maxTasks: 4_194_304,
    tasksPerSession: 1024,
    ...o,
  });

  test('a positive integer is taken as it is, spaces around it allowed', () => {
    expect(maxSessions({ AGENT_JOBS_MAX_SESSIONS: '1' }, () => machine())).toEqual({ max: 1, from: 'AGENT_JOBS_MAX_SESSIONS' });
    expect(maxSessions({ AGENT_JOBS_MAX_SESSIONS: ' 500 ' }, () => machine()).max).toBe(500);
  });

  test.each(['0', '-3', '2.5', 'ten', '1e3', '0x10', '99999999999999999999'])(
    '%j is refused, naming the variable and the value',
    (value) => {
      expect(() => maxSessions({ AGENT_JOBS_MAX_SESSIONS: value }, () => machine())).toThrow(
        new Error(`AGENT_JOBS_MAX_SESSIONS must be a positive integer (bash sessions per worker process), not ${JSON.stringify(value)}`),
      );
    },
  );

  test('unset or empty: sized to the machine, and the log line says from what', () => {
    const m = machine({ totalMemoryBytes: 8 * GiB });
    for (const env of [{}, { AGENT_JOBS_MAX_SESSIONS: '' }]) {
      const r = maxSessions(env, () => m);
      expect(r.max).toBe(defaultMaxSessions(m));
      expect(r.from).toMatch(/^sized to the machine: 8192 MiB of memory at 256 MiB a session, 4194304 task limit at 1024 a session/);
    }
  });

  test('the default is the least of memory / allowance and tasks / tasks per session', () => {
    // 8 GiB / 256 MiB = 32; tasks plenty.
    expect(defaultMaxSessions(machine({ totalMemoryBytes: 8 * GiB }))).toBe((8 * GiB) / SESSION_MEMORY_ALLOWANCE_BYTES);
    // 32768 pids (a common pid_max) / 1024 = 32 even with memory for 256.
    expect(defaultMaxSessions(machine({ maxTasks: 32_768 + 1000 }))).toBe(32);
  });

  test('within the floor and the ceiling', () => {
    expect(defaultMaxSessions(machine({ totalMemoryBytes: 512 * 1024 ** 2 }))).toBe(MIN_DEFAULT_MAX_SESSIONS);
    expect(defaultMaxSessions(machine({ maxTasks: 500 }))).toBe(MIN_DEFAULT_MAX_SESSIONS);
    expect(defaultMaxSessions(machine({ totalMemoryBytes: 1024 * GiB, maxTasks: Infinity }))).toBe(MAX_DEFAULT_MAX_SESSIONS);
  });

  test('this machine reads as some memory and a task limit, and gets a cap within the bounds', () => {
    const m = machineCapacity();
    expect(m.totalMemoryBytes).toBeGreaterThan(0);
    expect(m.maxTasks).toBeGreaterThan(0);
    expect(m.tasksPerSession).toBe(1024);
    const cap = defaultMaxSessions(m);
    expect(cap).toBeGreaterThanOrEqual(MIN_DEFAULT_MAX_SESSIONS);
    expect(cap).toBeLessThanOrEqual(MAX_DEFAULT_MAX_SESSIONS);
  });
});

describe('shutdownGraceMs (AGENT_JOBS_SHUTDOWN_GRACE)', () => {
  test('unset or empty: the default command timeout plus its slack, so a default command always ends inside it', () => {
    expect(shutdownGraceMs({})).toBe(DEFAULT_COMMAND_TIMEOUT_MS + COMMAND_TIMEOUT_SLACK_MS);
    expect(shutdownGraceMs({ AGENT_JOBS_SHUTDOWN_GRACE: ' ' })).toBe(150_000);
  });

  test.each([
    ['150s', 150_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['500ms', 500],
    ['0s', 0],
    [' 20 s ', 20_000],
  ])('%j is %d ms', (value, expected) => {
    expect(shutdownGraceMs({ AGENT_JOBS_SHUTDOWN_GRACE: value })).toBe(expected);
  });

  test.each(['150', '-5s', '1.5s', '2 minutes', 'soon', '99999999999999999h'])(
    '%j is refused: the error names the variable, the value and the form expected',
    (value) => {
      expect(() => shutdownGraceMs({ AGENT_JOBS_SHUTDOWN_GRACE: value })).toThrow(
        new Error(
          `AGENT_JOBS_SHUTDOWN_GRACE must be a whole number with a unit (ms, s, m or h), e.g. 150s or 5m, not ${JSON.stringify(value)}`,
        ),
      );
    },
  );

  // Node's timers keep at most 2^31 - 1 ms; a longer delay fires after 1 ms, which
  // would turn a huge grace into an exit at once that kills every running command.
  test.each(['597h', '600h', '99999999999ms', '9007199254740991ms', `${MAX_SHUTDOWN_GRACE_MS + 1}ms`])(
    '%j is refused: past the longest timer, the drain would end at once',
    (value) => {
      expect(() => shutdownGraceMs({ AGENT_JOBS_SHUTDOWN_GRACE: value })).toThrow(/must be at most 2147473647 ms/);
    },
  );

  test('the longest accepted grace plus the force time is exactly the longest Node timer', () => {
    expect(shutdownGraceMs({ AGENT_JOBS_SHUTDOWN_GRACE: `${MAX_SHUTDOWN_GRACE_MS}ms` }) + SHUTDOWN_FORCE_TIME_MS).toBe(2 ** 31 - 1);
    expect(shutdownGraceMs({ AGENT_JOBS_SHUTDOWN_GRACE: '596h' })).toBe(596 * 3_600_000);
  });
});
