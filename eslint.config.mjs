// ESLint flat config: type-aware TypeScript rules over src/, test/ and scripts/,
// plus the determinism rules of workflow code. `npm run lint` runs it with
// --max-warnings 0, and test/unit/tooling/lint.test.ts runs it in CI.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// TypeScript's CommonJS and ES module kinds (.cts, .mts) compile into dist/
// like .ts does, and workflow code can import them: lint them all.
const TS = '{ts,mts,cts}';
const TS_FILES = [`src/**/*.${TS}`, `test/**/*.${TS}`, `scripts/**/*.${TS}`];

// Code that runs inside the Temporal workflow sandbox, or is imported by it:
// the workflows, the shared contract (types, signal/query definitions, input
// schema), the deterministic helpers of src/shared/ (hashing, shell words,
// display) and the constants of src/config.ts.
const WORKFLOW_FOLDERS = ['src/workflows', 'src/contract', 'src/shared'];
const WORKFLOW_FILES = [...WORKFLOW_FOLDERS.map((dir) => `${dir}/**/*.${TS}`), 'src/config.ts'];

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
      : WORKFLOW_FOLDERS.map((dir) => `${dir}/${'*/'.repeat(depth - 1)}${depth === MAX_DEPTH ? '**/' : ''}*.${TS}`),
  // At MAX_DEPTH the `../` are taken all at once, so that none is left to go on with.
  toSrc: depth === 0 ? '\\./' : depth === MAX_DEPTH ? `(\\.\\./){${depth},}(?!\\.\\./)` : `(\\.\\./){${depth}}`,
}));
const inSrc = (toSrc, names) => `^${toSrc}(${names.join('|')})(\\.js)?(/|$)`;

// The modules of src/ that are workflow code. Everything else in src/ runs on
// the worker or CLI side (Node APIs, process.env, tree-sitter, child
// processes), today's modules and any added later: nothing of theirs may reach
// the sandbox. src/activities/ is the one exception, as types (below).
const WORKFLOW_SRC = ['config', 'contract', 'shared', 'workflows'];
// A relative specifier that reaches src/ and goes on to anything but workflow
// code (or the activities, checked on their own), or climbs out of src/ (into
// node_modules/, test/, ...): for src/config.ts any `../`; deeper, the `../`
// beyond src/ fail the lookahead (`../../x` from src/workflows/a.ts).
const outsideWorkflowCode = (toSrc) => `^${toSrc}(?!(${[...WORKFLOW_SRC, 'activities'].join('|')})(\\.js)?(/|$))`;

// Packages that name what is wrong with them; every other package but these
// few, and every subpath (internals such as @temporalio/workflow/lib/...),
// falls to the catch-all below, as in test/unit/workflows/sandbox.test.ts.
const PACKAGE_PATTERNS = [
  { regex: '^node:', message: `Node built-in module. ${WHY}` },
  { regex: '^@anthropic-ai/sdk(/|$)', message: `The Anthropic SDK does network I/O: call it from an activity. ${WHY}` },
  { regex: '^execa(/|$)', message: `Child processes belong in activities. ${WHY}` },
  {
    regex: '^@temporalio/(activity|worker|client|testing|envconfig)(/|$)',
    message: `Only @temporalio/workflow and @temporalio/common may be imported by workflow code. ${WHY}`,
  },
  { regex: '^tree-sitter', message: `Native module. ${WHY}` },
];
const WORKFLOW_PACKAGES = ['@temporalio/workflow', '@temporalio/common', 'zod'];
const escapeRegex = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const otherPackage = [
  '^(?!\\.)', // relative specifiers: the src/ patterns below
  `(?!(${nodeBuiltins.map(escapeRegex).join('|')})$)`, // `paths`
  ...PACKAGE_PATTERNS.map(({ regex }) => `(?!${regex.slice(1)})`),
  `(?!(${WORKFLOW_PACKAGES.map(escapeRegex).join('|')})$)`,
].join('');

const workflowImportRestrictions = (toSrc) => ({
  paths: nodeBuiltins.map((name) => ({ name, message: `Node built-in module. ${WHY}` })),
  patterns: [
    ...PACKAGE_PATTERNS,
    {
      regex: otherPackage,
      message: `Workflow code imports only the packages ${WORKFLOW_PACKAGES.join(', ')}, by name: a subpath is an internal, not the workflow API, and any other package must first be shown to be deterministic and free of Node (and added here and in sandbox.test.ts). ${WHY}`,
    },
    {
      regex: inSrc(toSrc, ['activities']),
      allowTypeImports: true,
      message: `Import activities as types only (\`import type\`) and call them through proxyActivities(). ${WHY}`,
    },
    ...[outsideWorkflowCode(toSrc), ...(toSrc === '\\./' ? ['^\\.\\./'] : [])].map((regex) => ({
      regex,
      message: `Not workflow code: from src/, workflow code imports only config, contract/, shared/, workflows/ and (as types) activities/; the rest is worker/CLI side (Node APIs, process.env), and nothing outside src/ is bundled for the sandbox. ${WHY}`,
    })),
  ],
});

const timerMessage = `Use sleep() or condition() from @temporalio/workflow. ${WHY}`;
const missingMessage = `Not defined in the workflow sandbox (the workflow task fails), and the real clock, randomness or scheduling outside it. ${WHY}`;
const zoneMessage = `Depends on the worker's time zone or locale (TZ, LANG), which reach the sandbox: two workers disagree, and replay on another one fails. Use the UTC methods and toISOString(). ${WHY}`;
// MAINTENANCE: the same list as in test/unit/workflows/sandbox.test.ts (a second, independent guard).
// Date methods that read or set local time, and the locale-dependent methods of
// strings, numbers and arrays. Their UTC twins (getUTCHours, ...) are fine.
const ZONE_AND_LOCALE_METHODS = [
  ...['FullYear', 'Year', 'Month', 'Date', 'Day', 'Hours', 'Minutes', 'Seconds'].flatMap((part) => [`get${part}`, `set${part}`]),
  'getTimezoneOffset',
  'toDateString',
  'toTimeString',
  'toLocaleString',
  'toLocaleDateString',
  'toLocaleTimeString',
  'toLocaleUpperCase',
  'toLocaleLowerCase',
  'localeCompare',
];
// Places where naming `Date` or `Math` hands the object on (an alias, an
// argument, a property value, ...), past the rules that look for Date.now and
// Math.random by name.
const HANDED_ON = [
  'VariableDeclarator > Identifier.init',
  'AssignmentExpression > Identifier.right',
  'CallExpression > Identifier.arguments',
  'NewExpression > Identifier.arguments',
  'Property > Identifier.value',
  'ArrayExpression > Identifier',
  'SpreadElement > Identifier',
  'ReturnStatement > Identifier',
  'ArrowFunctionExpression > Identifier.body',
  'ConditionalExpression > Identifier',
  'LogicalExpression > Identifier',
  'TSAsExpression > Identifier.expression',
];

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
    files: [`test/**/*.${TS}`],
    rules: {
      // Jest's asymmetric matchers (expect.any(), expect.stringContaining(), ...)
      // are typed `any`, so every toEqual({ x: expect.any(String) }) is an
      // "unsafe assignment": 27 findings, none of them a real `any` leak.
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
  {
    // execa behind one module (src/dev/testing/exec.ts): the development tools run programs through it.
    files: [`src/**/*.${TS}`],
    ignores: [...WORKFLOW_FILES, 'src/dev/testing/exec.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^execa(/|$)', message: 'Import execa through src/dev/testing/exec.ts, the one module that imports it.' }] },
      ],
    },
  },
  {
    // The workflow and the session read function by function: none longer than a screen and a half
    // (comments and blank lines count, as a reader sees them).
    files: [`src/workflows/**/*.${TS}`, `src/session/**/*.${TS}`],
    rules: { 'max-lines-per-function': ['error', { max: 99 }] },
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
        // Through the global object, every other rule here is one computed key away (globalThis['Date'], Reflect.get(globalThis, 'process')).
        ...['globalThis', 'global'].map((name) => ({
          name,
          message: `Name what you use; the global object reaches around every rule here. ${WHY}`,
        })),
        ...['performance', 'crypto', 'queueMicrotask', 'structuredClone'].map((name) => ({ name, message: missingMessage })),
        {
          name: 'Reflect',
          message: `Reflect reads and calls by computed names, past every rule here (Reflect.get(workflowInfo(), 'unsafe')). ${WHY}`,
        },
        {
          name: 'module',
          message: `CommonJS's module object loads modules past the import rules (module.require). Import statically. ${WHY}`,
        },
        ...['WeakRef', 'FinalizationRegistry'].map((name) => ({
          name,
          message: `Garbage collection is not deterministic (the SDK throws DeterminismViolationError). ${WHY}`,
        })),
        { name: 'Intl', message: zoneMessage },
      ],
      'no-eval': ['error', { allowIndirect: false }],
      // `void promise` is still a promise nobody awaits (src/workflows/README.md: every activity call and timer is awaited).
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: false }],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ImportExpression',
          message: `No import(): the sandbox has only what the bundler put in, and no-restricted-imports does not look here. Import statically. ${WHY}`,
        },
        {
          selector: `:matches(${HANDED_ON.join(', ')})[name=/^(Date|Math)$/]`,
          message: `Use Date and Math by name (new Date().toISOString(), Math.max(...)): handed on, they pass the Date.now and Math.random rules. ${WHY}`,
        },
        {
          // The one use of the current time: a timestamp (README). A number or a string in local time is not that.
          selector:
            "NewExpression[callee.name='Date'][arguments.length=0]:not(MemberExpression[property.name='toISOString'] > NewExpression.object)",
          message: `Write new Date().toISOString() (a timestamp in UTC): as a number the current time measures durations, as a string it is in the worker's time zone. ${WHY}`,
        },
        { selector: "NewExpression[callee.name='Date'][arguments.length>1]", message: zoneMessage },
        {
          selector: 'ExpressionStatement > CallExpression[callee.property.name=/^(then|catch|finally)$/]',
          message: `Await the promise: a .then()/.catch() chain nobody awaits floats. ${WHY}`,
        },
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
        {
          object: 'Date',
          property: 'parse',
          message: `A string without an offset parses in the worker's time zone, and Date.parse(new Date()...) reads the clock as a number. ${WHY}`,
        },
        {
          property: 'unsafe',
          message: `workflowInfo().unsafe is the worker's wall clock, fresh randomness and whether this is a replay: none of it is the same on replay. ${WHY}`,
        },
        ...ZONE_AND_LOCALE_METHODS.map((property) => ({ property, message: zoneMessage })),
      ],
    },
  },
  ...DEPTHS.map(({ files, toSrc }) => ({
    files,
    rules: { '@typescript-eslint/no-restricted-imports': ['error', workflowImportRestrictions(toSrc)] },
  })),
  {
    // JavaScript has no place in workflow code: tsc neither checks nor compiles
    // it into dist/, and the rules above are for TypeScript.
    files: WORKFLOW_FOLDERS.map((dir) => `${dir}/**/*.{js,mjs,cjs}`),
    rules: {
      'no-restricted-syntax': ['error', { selector: 'Program', message: `Workflow code is TypeScript (.ts): rename this file. ${WHY}` }],
    },
  },
  // Last: turn off every stylistic rule that would fight Prettier.
  prettier,
);
