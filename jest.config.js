// execa 9 and its helpers are ESM-only; Jest 30's CommonJS runtime on Node 20
// cannot load them, so ts-jest transpiles every package
// under node_modules whose package.json says "type": "module".
const fs = require('node:fs');

// The processes the tests start (CLI, workers, tmux's shell) stand for a person who types
// `agent-jobs`: under `npx jest` npm's `npm_command=exec` would make the CLI's hints say
// `npx agent-jobs` (src/cli/invocation.ts). Removed here, in the process that forks every
// jest worker, so no child inherits it; a test of it sets it on its own child.
delete process.env.npm_command;
const path = require('node:path');
// And who has it on the PATH (`npm link`): a shim of this checkout's bin in a folder of its own, first on the PATH.
// Without one the hints would say `node bin/agent-jobs.js` (src/cli/invocation.ts); test/unit/cli/invocation.test.ts
// sets the PATH of its own calls.
const shimDir = path.join(
  require('node:os').tmpdir(),
  `agent-jobs-bin-${require('node:crypto').createHash('sha256').update(__dirname).digest('hex').slice(0, 12)}`,
);
fs.mkdirSync(shimDir, { recursive: true });
fs.writeFileSync(
  path.join(shimDir, 'agent-jobs'),
  `#!/bin/sh\nexec "${process.execPath}" "${path.join(__dirname, 'bin', 'agent-jobs.js')}" "$@"\n`,
  { mode: 0o755 },
);
process.env.PATH = `${shimDir}${path.delimiter}${process.env.PATH ?? ''}`;
const { SLOW_MODE, ignoredPaths } = require('./test/slow-suites');

function esmPackages(dir = path.join(__dirname, 'node_modules'), found = new Set()) {
  if (!fs.existsSync(dir)) return found;
  for (const entry of fs.readdirSync(dir)) {
    if (entry.startsWith('.')) continue;
    const full = path.join(dir, entry);
    if (entry.startsWith('@')) {
      esmPackages(full, found);
      continue;
    }
    const scoped = path.basename(dir).startsWith('@') ? `${path.basename(dir)}/${entry}` : entry;
    try {
      const pj = JSON.parse(fs.readFileSync(path.join(full, 'package.json'), 'utf8'));
      if (pj.type === 'module') found.add(scoped);
    } catch {
      /* not a package */
    }
    esmPackages(path.join(full, 'node_modules'), found);
  }
  return found;
}
const esmOnly = [...esmPackages()].map((n) => n.replace(/[.+]/g, '\\$&'));

const common = {
  testEnvironment: 'node',
  // Jest 30's default 'soft' globals cleanup recurses forever when a later test file writes a global an
  // earlier one left ("RangeError: Maximum call stack size exceeded" at originalSetter, jestjs/jest#16044,
  // reopened as #16443, unfixed in 30.5): a suite then fails to run at random. Every test file runs in its
  // own environment and cleans up after itself, so the cleanup is off.
  testEnvironmentOptions: { globalsCleanup: 'off' },
  transform: {
    '^.+\\.[tj]s$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  // The slow suites run only when asked (test/slow-suites.js): `npm test` leaves them out, .ci/run runs them after it.
  testPathIgnorePatterns: ignoredPaths(),
  // unicorn-magic (used by execa) exports only an "import" condition.
  moduleNameMapper: { '^unicorn-magic$': '<rootDir>/node_modules/unicorn-magic/node.js' },
};

if (SLOW_MODE === 'skip' && !process.env.JEST_WORKER_ID)
  process.stderr.write(
    'test: the slow suites are left out (test/slow-suites.js); AGENT_JOBS_SLOW_TESTS=only runs them, 1 runs everything\n',
  );

/** @type {import('jest').Config} */
module.exports = {
  // On these 2-core machines jest would run every suite in its own process, one after another, in one heap
  // that grew over a whole run (each test file's module registry: 0.8 GB RSS at the start, 3.4 to 3.7 GB at
  // the end): the replay of the saved histories, 12 s in a quiet run, ran past 120 s in all three loaded
  // fresh-clone runs. With a limit jest runs the suites in a child process instead and starts a new one
  // after any suite that leaves its heap above the limit (jest's workerIdleMemoryLimit, measured on heapUsed).
  workerIdleMemoryLimit: '1GB',
  // Two suites at a time, not jest's default of one on 2 cores: the integration suites mostly wait on timers
  // (heartbeats, timeouts, a worker's start), so a second suite uses the idle time; one after another the whole
  // run took 32 minutes on a fresh clone. Three at a time ran lint and a steering test past their timeouts on a
  // machine loaded to 12-17. Each worker runs its integration files against a dev server of its own
  // (test/integration/environment.ts), so suites that run together share no task queue.
  // docs/development.md, "Suites side by side", has the measurements.
  maxWorkers: 2,
  // Slowest files first even without jest's timing cache (a fresh clone, CI): test/sequencer.js.
  testSequencer: '<rootDir>/test/sequencer.js',
  // Jest's own lines, and test/progress-reporter.js's on stderr: each file as it starts and ends, and once a minute
  // what is still running (jest shows the running files only on a terminal's status line).
  reporters: ['default', '<rootDir>/test/progress-reporter.js'],
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup-runtime.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      // Node's environment on the dev server of the jest worker that runs the file.
      testEnvironment: '<rootDir>/test/integration/environment.ts',
      // Runs wait on real timeouts (heartbeats, approvals, worker loss): minutes, not ms.
      setupFilesAfterEnv: ['<rootDir>/test/integration/setup.ts'],
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/integration/global-setup.ts',
      globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
    },
  ],
};
