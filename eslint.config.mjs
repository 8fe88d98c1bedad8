// ESLint flat config: type-aware TypeScript rules over src/, test/ and scripts/,
// plus the determinism rules of workflow code. `npm run lint` runs it with
// --max-warnings 0, and test/unit/tooling/lint.test.ts runs it in CI.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const TS_FILES = ['src/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts'];

// Code that runs inside the Temporal workflow sandbox, or is imported by it:
// the workflows, the shared contract (types, signal/query definitions, input
// schema, display helpers) and the constants of src/config.ts.
const WORKFLOW_FILES = ['src/workflows/**/*.ts', 'src/contract/**/*.ts', 'src/config.ts'];

const WHY = 'Workflow code must be deterministic (replayed from history in the Temporal sandbox); see src/workflows/README.md.';

// `node:*` covers the prefix-only modules too (node:test, node:sqlite, node:sea).
const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));

// Relative specifiers that name a top-level folder or module of src/ depend
// on the importing file's depth: `./x` from src/config.ts, `../x` from
// src/workflows/a.ts, `../../x` from src/workflows/sub/a.ts. (`./session` in
// src/workflows/ is the workflow's own session.ts, not src/session/.)
// Deeper than MAX_DEPTH, any number of `../` counts.
const MAX_DEPTH = 4;
const DEPTHS = Array.from({ length: MAX_DEPTH + 1 }, (_, depth) => ({
  files:
    depth === 0
      ? ['src/config.ts']
      : ['src/workflows', 'src/contract'].map((dir) => `${dir}/${'*/'.repeat(depth - 1)}${depth === MAX_DEPTH ? '**/' : ''}*.ts`),
  toSrc: depth === 0 ? '\\./' : depth === MAX_DEPTH ? `(\\.\\./){${depth},}` : `(\\.\\./){${depth}}`,
}));
const inSrc = (toSrc, names) => `^${toSrc}(${names.join('|')})(\\.js)?(/|$)`;

// src/ modules that run only on the worker or CLI side (Node APIs, process.env,
// tree-sitter, child processes): nothing of theirs may reach the sandbox.
const NODE_SIDE_SRC = [
  'bench',
  'cli',
  'client',
  'demo',
  'devserver',
  'model-server',
  'policy',
  'ports',
  'proc-environ',
  'scripts',
  'session',
  'settings',
  'temporal',
  'worker',
];

const workflowImportRestrictions = (toSrc) => ({
  paths: nodeBuiltins.map((name) => ({ name, message: `Node built-in module. ${WHY}` })),
  patterns: [
    { regex: '^node:', message: `Node built-in module. ${WHY}` },
    { regex: '^@anthropic-ai/sdk(/|$)', message: `The Anthropic SDK does network I/O: call it from an activity. ${WHY}` },
    { regex: '^execa(/|$)', message: `Child processes belong in activities. ${WHY}` },
    {
      regex: '^@temporalio/(activity|worker|client|testing|envconfig)(/|$)',
      message: `Only @temporalio/workflow and @temporalio/common may be imported by workflow code. ${WHY}`,
    },
    { regex: '^tree-sitter', message: `Native module. ${WHY}` },
    {
      regex: inSrc(toSrc, ['activities']),
      allowTypeImports: true,
      message: `Import activities as types only (\`import type\`) and call them through proxyActivities(). ${WHY}`,
    },
    { regex: inSrc(toSrc, NODE_SIDE_SRC), message: `Worker/CLI-side module of src/ (Node APIs, process.env). ${WHY}` },
  ],
});

const timerMessage = `Use sleep() or condition() from @temporalio/workflow. ${WHY}`;

export default defineConfig(
  {
    ignores: ['dist/', 'node_modules/', 'data/', '.tools/', 'coverage/', 'test/fixtures/'],
  },
  {
    files: TS_FILES,
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        // tsconfig.json includes src/ and test/ (tsconfig.build.json only src/).
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // tsc already reports unused locals and parameters (noUnusedLocals,
      // noUnusedParameters in tsconfig.json); a second report is noise.
      '@typescript-eslint/no-unused-vars': 'off',
      // Control characters in regular expressions are the point here: the
      // session and display code strips them from untrusted command output
      // and model text, and the tests assert that nothing raw gets through.
      'no-control-regex': 'off',
      // A `let` that a closure reads before its one assignment (shell.ts:
      // `onExceeded` may fire before `shell` exists) cannot become `const`
      // without a TDZ ReferenceError in place of the intended no-op.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `catch (err) { return Promise.reject(err); }` passes on what was thrown,
      // like `throw err`, which only-throw-error allows for unknown too.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Jest's asymmetric matchers (expect.any(), expect.stringContaining(), ...)
      // are typed `any`, so every toEqual({ x: expect.any(String) }) is an
      // "unsafe assignment": 27 findings, none of them a real `any` leak.
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
  {
    // The few JS files (bin/agent-jobs.js, jest.config.js, this file): plain
    // Node scripts, not type-checked.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: {
      globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly', console: 'readonly' },
    },
  },
  {
    files: WORKFLOW_FILES,
    rules: {
      'no-restricted-globals': [
        'error',
        ...['process', 'Buffer', '__dirname', '__filename'].map((name) => ({ name, message: `Node global. ${WHY}` })),
        ...['setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval', 'clearImmediate'].map((name) => ({
          name,
          message: timerMessage,
        })),
      ],
      // Temporal's sandbox seeds Math.random and pins Date to workflow time, but
      // src/contract/ and src/config.ts also run outside it (client, CLI), where
      // they would not be; and in the workflow itself the intent reads better
      // through the workflow API.
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: `Use uuid4() from @temporalio/workflow, or take the value as input. ${WHY}` },
        {
          object: 'Date',
          property: 'now',
          message: `Time comes from the workflow (workflowInfo(), or new Date() inside the workflow). ${WHY}`,
        },
        { object: 'globalThis', property: 'process', message: `Node global. ${WHY}` },
        { object: 'globalThis', property: 'setTimeout', message: timerMessage },
        { object: 'globalThis', property: 'setInterval', message: timerMessage },
      ],
    },
  },
  ...DEPTHS.map(({ files, toSrc }) => ({
    files,
    rules: { '@typescript-eslint/no-restricted-imports': ['error', workflowImportRestrictions(toSrc)] },
  })),
  // Last: turn off every stylistic rule that would fight Prettier.
  prettier,
);
