/**
 * Lint and format are part of the test suite, so CI fails on a finding:
 * ESLint over the whole project (as `npm run lint`), Prettier's check (as
 * `npm run format:check`), and proof that the workflow determinism rules of
 * eslint.config.mjs do fire.
 *
 * ESLint and Prettier run as child processes: both load ESM (ESLint its
 * eslint.config.mjs, Prettier its plugins) through dynamic import(), which
 * Jest's CommonJS runtime refuses without --experimental-vm-modules.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fastAsked, fastDescribe, slowAsked, slowDescribe } from '../../slow';

const ROOT = path.resolve(__dirname, '../../..');
const ESLINT = path.join(ROOT, 'node_modules/eslint/bin/eslint.js');
const PRETTIER = path.join(ROOT, 'node_modules/prettier/bin/prettier.cjs');
const LINT_TEXT = path.join(__dirname, 'lint-text.mjs');

interface Message {
  line: number;
  column: number;
  ruleId: string | null;
  severity: 1 | 2;
  message: string;
}
interface FileResult {
  filePath: string;
  messages: Message[];
}

/** Runs `node <args>` in the repository root; resolves with its exit code and output. */
function node(args: string[], input?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** The last run {@link besideEslint} queued. */
let queued: Promise<unknown> = Promise.resolve();
/**
 * Starts `run` now, beside ESLint, after the runs queued before it: ESLint over the project takes most of this
 * file's time on one core, and Prettier and the two lint-text.mjs runs (each a TypeScript program of its own) take
 * the second, so the file holds two cores at most, one after another as before within each line.
 * @returns `run`'s promise (awaited by the test that needs it)
 */
function besideEslint<T>(run: () => Promise<T>): Promise<T> {
  // Collected but skipped (only the slow suites run): nothing to start.
  if (!fastAsked) return new Promise<T>(() => undefined);
  const p = queued.then(run);
  queued = p.catch(() => undefined);
  return p;
}

/** One line per finding: `file:line:column rule message`. */
function describeFindings(results: FileResult[]): string[] {
  return results.flatMap((r) =>
    r.messages.map((m) => {
      const file = path.isAbsolute(r.filePath) ? path.relative(ROOT, r.filePath) : r.filePath;
      const level = m.severity === 2 ? 'error' : 'warning';
      return `${file}:${m.line}:${m.column} ${m.ruleId ?? '(no rule)'} ${level}: ${m.message}`;
    }),
  );
}

/**
 * ESLint over the project is a slow suite, run when AGENT_JOBS_SLOW_TESTS is `only` (.ci/run's second step) or `1`
 * (`npm run lint` is the same check): its type-aware pass type-checks every source and test file, 56 s of a CI run's jest time, and no option tried
 * made it cheaper (docs/development.md, "Slow suites").
 */
if (!slowAsked)
  console.warn(
    'lint.test.ts: ESLint over the project skipped, a slow suite; `npm run lint` runs it, and AGENT_JOBS_SLOW_TESTS=only as .ci/run does',
  );

slowDescribe('eslint', () => {
  // Started as the file is collected, so the other children below run beside it.
  const eslintRun = slowAsked ? node([ESLINT, '--format', 'json', '--max-warnings', '0', '.']) : Promise.reject(new Error('not run'));
  eslintRun.catch(() => undefined);
  test('the project has no lint errors and no warnings', async () => {
    const { code, stdout, stderr } = await eslintRun;
    // Exit 2 is ESLint itself failing (bad config, crash): there is no report to show.
    if (code !== 0 && code !== 1) throw new Error(`eslint exited with ${code}:\n${stderr}`);
    const results = JSON.parse(stdout) as FileResult[];
    const findings = describeFindings(results);
    if (findings.length > 0) {
      throw new Error(`${findings.length} lint findings (npm run lint; npm run lint:fix fixes some):\n${findings.join('\n')}`);
    }
    // A config that silently matched nothing would pass too: it must have type-checked the sources and the tests.
    const linted = results.map((r) => path.relative(ROOT, r.filePath));
    expect(linted).toEqual(
      expect.arrayContaining(['src/workflows/agent-run.ts', 'src/config.ts', 'src/worker.ts', 'test/unit/tooling/lint.test.ts']),
    );
    expect(linted.filter((f) => f.endsWith('.ts')).length).toBeGreaterThan(100);
    expect(linted.some((f) => f.startsWith('test/fixtures/'))).toBe(false);
  }, 300_000);
});

fastDescribe('prettier', () => {
  // --list-different: exit 0 when all are formatted, 1 with their names, 2 on an error.
  const prettierRun = besideEslint(() => node([PRETTIER, '--list-different', '.']));
  test('every file Prettier covers is formatted', async () => {
    const { code, stdout, stderr } = await prettierRun;
    if (code !== 0 && code !== 1) throw new Error(`prettier exited with ${code}:\n${stderr}`);
    const unformatted = stdout.split('\n').filter(Boolean);
    if (unformatted.length > 0) {
      throw new Error(`${unformatted.length} files are not formatted (npm run format fixes them):\n${unformatted.join('\n')}`);
    }
  }, 120_000);
});

fastDescribe('workflow determinism rules', () => {
  // One source, linted as if it were a file in each folder. Line numbers matter: see LINES.
  const SOURCE = [
    "import { readFileSync } from 'node:fs';",
    "import { join } from 'path';",
    "import Anthropic from '@anthropic-ai/sdk';",
    "import { SESSION_NOT_FOUND } from '<src>activities/types';",
    "import type { SessionActivities } from '<src>activities/session';",
    "import { sleep } from '@temporalio/workflow';",
    "import { temporalSettings } from '<src>settings';",
    'export type Activities = SessionActivities;',
    'export const used = [readFileSync, join, Anthropic, SESSION_NOT_FOUND, temporalSettings];',
    '',
    'export async function wf(): Promise<number> {',
    '  sleep(1000);',
    '  setTimeout(() => undefined, 1);',
    '  await sleep(1);',
    '  return Date.now() + Math.random() + Number(process.env.X);',
    '}',
    '',
  ].join('\n');
  const LINES = { nodeFs: 1, barePath: 2, sdk: 3, activityValue: 4, activityType: 5, workerSide: 7, floating: 12, timer: 13, clocks: 15 };

  // `src`: the relative path from the file's folder to src/.
  const CASES = [
    { filePath: 'src/workflows/__lint_fixture__.ts', src: '../', restricted: true },
    { filePath: 'src/workflows/nested/__lint_fixture__.ts', src: '../../', restricted: true },
    { filePath: 'src/contract/__lint_fixture__.ts', src: '../', restricted: true },
    // An existing file: linted in its real project, with this text instead of its own.
    { filePath: 'src/config.ts', src: './', restricted: true },
    // Worker-side code may import all of it.
    { filePath: 'src/cli/__lint_fixture__.ts', src: '../', restricted: false },
  ];
  // Modules of the workflow's own folder may share a name with a worker-side folder of src/ (src/workflows/session.ts).
  const SIBLINGS = {
    filePath: 'src/workflows/__lint_fixture_siblings__.ts',
    code: "import { a } from './session';\nimport { b } from './activities';\nimport { c } from './settings';\nexport const used = [a, b, c];\n",
  };

  const input = [...CASES.map((c) => ({ filePath: c.filePath, code: SOURCE.replaceAll('<src>', c.src) })), SIBLINGS];
  const lintRun = besideEslint(() => node([LINT_TEXT], JSON.stringify(input)));
  let results: Map<string, Message[]>;
  beforeAll(async () => {
    const { code, stdout, stderr } = await lintRun;
    if (code !== 0) throw new Error(`lint-text.mjs exited with ${code}:\n${stderr}`);
    results = new Map((JSON.parse(stdout) as FileResult[]).map((r) => [r.filePath, r.messages]));
  }, 180_000);

  /** `line rule` of each finding in `filePath` (parse errors would show as `line null`). */
  const found = (filePath: string): string[] => (results.get(filePath) ?? []).map((m) => `${m.line} ${m.ruleId}`);

  test.each(CASES.filter((c) => c.restricted))(
    '$filePath: banned imports are reported, a type-only activity import is not',
    ({ filePath }) => {
      const f = found(filePath);
      expect(f).toEqual(
        expect.arrayContaining(
          [LINES.nodeFs, LINES.barePath, LINES.sdk, LINES.activityValue, LINES.workerSide].map(
            (line) => `${line} @typescript-eslint/no-restricted-imports`,
          ),
        ),
      );
      expect(f.filter((x) => x.startsWith(`${LINES.activityType} `))).toEqual([]);
      expect(f.filter((x) => x.endsWith(' null'))).toEqual([]);
    },
  );

  test.each(CASES.filter((c) => c.restricted))('$filePath: timers, the clock, randomness and process are reported', ({ filePath }) => {
    const f = found(filePath);
    expect(f).toContain(`${LINES.timer} no-restricted-globals`);
    expect(f).toContain(`${LINES.clocks} no-restricted-globals`); // process
    expect(f.filter((x) => x === `${LINES.clocks} no-restricted-properties`)).toHaveLength(2); // Date.now, Math.random
  });

  test('the messages say why', () => {
    const restricted = (results.get('src/workflows/__lint_fixture__.ts') ?? []).filter((m) =>
      /no-restricted-(imports|globals|properties)$/.test(m.ruleId ?? ''),
    );
    expect(restricted.length).toBeGreaterThan(0);
    for (const m of restricted) expect(m.message).toContain('see src/workflows/README.md');
  });

  test.each(CASES)('$filePath: a floating promise is reported', ({ filePath }) => {
    expect(found(filePath)).toContain(`${LINES.floating} @typescript-eslint/no-floating-promises`);
  });

  test('a sibling module named like a worker-side folder of src/ is not mistaken for it', () => {
    expect(found(SIBLINGS.filePath).filter((x) => x.endsWith(' @typescript-eslint/no-restricted-imports'))).toEqual([]);
  });

  test('worker-side code is not held to the workflow rules', () => {
    const f = found('src/cli/__lint_fixture__.ts');
    expect(f.filter((x) => /no-restricted-(imports|globals|properties)$/.test(x))).toEqual([]);
  });
});

fastDescribe('workflow determinism rules: the ways around them', () => {
  // Each line of BYPASSES gets past the rules above in some way an engineer (or a refactor) could write; each must be
  // reported, on its own line, by the rule named. Whether the SDK's sandbox would also stop it at run time is in the
  // comment: those it would not stop are the real holes (time zone, locale, `unsafe`); the rest fail the workflow task
  // (a stuck run) or are pinned by the sandbox but break the rule outside it (src/contract/ and src/config.ts also
  // run in the CLI).
  const BYPASSES: Array<{ name: string; code: string; rule: string }> = [
    // Bundled by webpack as a module that throws on load; the walker of sandbox.test.ts could not resolve it.
    {
      name: 'a relative path out of src/ into node_modules',
      code: "import Anthropic from '../../node_modules/@anthropic-ai/sdk';",
      rule: '@typescript-eslint/no-restricted-imports',
    },
    {
      name: 'a relative path out of src/ into test/',
      code: "import { helper } from '../../test/fixtures/bad-workflow/helper';",
      rule: '@typescript-eslint/no-restricted-imports',
    },
    {
      name: 'a module of src/ that is not workflow code and is on no list',
      code: "import { unlisted } from '../unlisted-node-side-module';",
      rule: '@typescript-eslint/no-restricted-imports',
    },
    // Packages by allow-list, as in sandbox.test.ts: a subpath is not the package's workflow API.
    {
      name: 'an internal module of @temporalio/workflow',
      code: "import { getActivator } from '@temporalio/workflow/lib/global-attributes';",
      rule: '@typescript-eslint/no-restricted-imports',
    },
    {
      name: 'a subpath of @temporalio/common',
      code: "import { historyFromJSON } from '@temporalio/common/lib/proto-utils';",
      rule: '@typescript-eslint/no-restricted-imports',
    },
    {
      name: 'a package on no list',
      code: "import { something } from 'some-new-package';",
      rule: '@typescript-eslint/no-restricted-imports',
    },
    // no-restricted-imports does not look at import(); webpack fails on a literal Node module, import(name) fails at run time.
    { name: "import('node:fs')", code: "export const dyn = import('node:fs');", rule: 'no-restricted-syntax' },
    {
      name: 'import(name)',
      code: "const moduleName: string = 'node:fs'; export const dynName = import(moduleName);",
      rule: 'no-restricted-syntax',
    },
    { name: "import('../activities/claude')", code: "export const claude = import('../activities/claude');", rule: 'no-restricted-syntax' },
    // `global`, `globalThis[...]`, Reflect: process is undefined in the sandbox, so these fail the task.
    { name: 'global.process', code: 'export const home = global.process.env.HOME;', rule: 'no-restricted-globals' },
    { name: "globalThis['Date'].now()", code: "export const t1 = globalThis['Date'].now();", rule: 'no-restricted-globals' },
    {
      name: "Reflect.get(globalThis, 'process')",
      code: "export const proc = Reflect.get(globalThis, 'process') as unknown;",
      rule: 'no-restricted-globals',
    },
    { name: 'global.setTimeout', code: 'global.setTimeout(() => undefined, 1);', rule: 'no-restricted-globals' },
    // Reflect reads any property by a computed name, workflowInfo().unsafe included (the sandbox does not stop that one).
    {
      name: "Reflect.get(workflowInfo(), 'unsafe')",
      code: "export const u = Reflect.get(workflowInfo(), 'unsafe') as unknown;",
      rule: 'no-restricted-globals',
    },
    // CommonJS's module object loads modules past no-require-imports (webpack fails on this one at build time).
    {
      name: "module.require('node:fs')",
      code: "export const fsByModule = module.require('node:fs') as unknown;",
      rule: 'no-restricted-globals',
    },
    // Pinned to workflow time (Date) or seeded (Math.random) inside the sandbox; the clock and randomness outside it.
    { name: 'Date through an alias', code: 'const D = Date; export const t2 = D.now();', rule: 'no-restricted-syntax' },
    { name: 'Math through an alias', code: 'const M = Math; export const r = M.random();', rule: 'no-restricted-syntax' },
    { name: 'new Date().getTime()', code: 'export const t3 = new Date().getTime();', rule: 'no-restricted-syntax' },
    { name: '+new Date()', code: 'export const t4 = +new Date();', rule: 'no-restricted-syntax' },
    { name: 'Number(new Date())', code: 'export const t5 = Number(new Date());', rule: 'no-restricted-syntax' },
    {
      name: 'Date.parse(new Date().toISOString())',
      code: 'export const t6 = Date.parse(new Date().toISOString());',
      rule: 'no-restricted-properties',
    },
    // Not defined in the sandbox (the task fails); the real clock, randomness and scheduling outside it.
    { name: 'performance.now()', code: 'export const t7 = performance.now();', rule: 'no-restricted-globals' },
    { name: 'crypto.randomUUID()', code: 'export const id = crypto.randomUUID();', rule: 'no-restricted-globals' },
    {
      name: 'crypto.getRandomValues()',
      code: 'export const bytes = crypto.getRandomValues(new Uint8Array(4));',
      rule: 'no-restricted-globals',
    },
    { name: 'queueMicrotask()', code: 'queueMicrotask(() => undefined);', rule: 'no-restricted-globals' },
    { name: 'structuredClone()', code: 'export const copy = structuredClone({ a: 1 });', rule: 'no-restricted-globals' },
    // The SDK throws DeterminismViolationError on these.
    { name: 'WeakRef', code: 'export const ref = new WeakRef({});', rule: 'no-restricted-globals' },
    { name: 'FinalizationRegistry', code: 'export const reg = new FinalizationRegistry(() => undefined);', rule: 'no-restricted-globals' },
    // Runs in the sandbox; hides anything from every check that reads the code.
    { name: 'eval()', code: "export const e1 = eval('Date.now()') as number;", rule: 'no-eval' },
    { name: 'indirect eval', code: "export const e2 = (0, eval)('Math.random()') as number;", rule: 'no-eval' },
    // NOT stopped by the sandbox: the worker's wall clock, fresh entropy, and whether this is a replay.
    { name: 'workflowInfo().unsafe.now()', code: 'export const wall = workflowInfo().unsafe.now();', rule: 'no-restricted-properties' },
    {
      name: 'workflowInfo().unsafe.random',
      code: 'export const fresh = workflowInfo().unsafe.random.uuid4();',
      rule: 'no-restricted-properties',
    },
    {
      name: 'const { unsafe } = workflowInfo()',
      code: 'const { unsafe } = workflowInfo(); export const replaying = unsafe.isReplaying;',
      rule: 'no-restricted-properties',
    },
    // NOT stopped by the sandbox: the worker's time zone and locale (TZ, LANG) reach it, so two workers disagree.
    { name: 'new Date(0).getHours()', code: 'export const hour = new Date(0).getHours();', rule: 'no-restricted-properties' },
    { name: 'toLocaleString()', code: 'export const local = (1234.5).toLocaleString();', rule: 'no-restricted-properties' },
    {
      name: 'localeCompare()',
      code: "export const order = ['b', 'a'].sort((x, y) => x.localeCompare(y));",
      rule: 'no-restricted-properties',
    },
    { name: 'Intl', code: 'export const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;', rule: 'no-restricted-globals' },
    {
      name: 'new Date(y, m, d) (local time)',
      code: 'export const jan1 = new Date(2024, 0, 1).toISOString();',
      rule: 'no-restricted-syntax',
    },
    { name: 'String(new Date()) (local time zone name)', code: 'export const shown = String(new Date());', rule: 'no-restricted-syntax' },
    // Floating promises that no-floating-promises lets through by default.
    {
      name: 'void sleep()',
      code: 'export async function f1(): Promise<void> { void sleep(1); await sleep(1); }',
      rule: '@typescript-eslint/no-floating-promises',
    },
    {
      name: 'sleep().catch()',
      code: 'export async function f2(): Promise<void> { sleep(1).catch(() => undefined); await sleep(1); }',
      rule: 'no-restricted-syntax',
    },
    {
      name: 'sleep().then(ok, fail)',
      code: 'export async function f3(): Promise<void> { sleep(1).then(() => undefined, () => undefined); await sleep(1); }',
      rule: 'no-restricted-syntax',
    },
  ];
  const HEADER = "import { sleep, workflowInfo } from '@temporalio/workflow';";
  const BYPASS_FILE = 'src/workflows/__lint_bypasses__.ts';
  const lineOf = (i: number): number => i + 2; // after HEADER

  // Files the rules must reach whatever their extension: TypeScript's other module kinds compile into dist/ and are
  // bundled; a JavaScript file is not type-checked or compiled, so it has no place in workflow code.
  const OTHER_FILES = [
    { filePath: 'src/workflows/__lint_fixture__.cts', code: 'export const home = process.env.HOME;\n', rule: 'no-restricted-globals' },
    { filePath: 'src/workflows/__lint_fixture__.mts', code: 'export const home = process.env.HOME;\n', rule: 'no-restricted-globals' },
    { filePath: 'src/contract/__lint_fixture__.cts', code: 'export const home = process.env.HOME;\n', rule: 'no-restricted-globals' },
    { filePath: 'src/workflows/__lint_fixture__.js', code: 'export const home = 1;\n', rule: 'no-restricted-syntax' },
  ];

  // What workflow code does write, and must go on writing.
  const ALLOWED = {
    filePath: 'src/workflows/__lint_allowed__.ts',
    code: [
      "import { sleep, uuid4, workflowInfo } from '@temporalio/workflow';",
      "import type { SessionActivities } from '../activities/session';",
      "import { approveSignal } from '../contract';",
      "import { resolveInput } from '../contract/input';",
      "import { CONTINUE_AS_NEW_HISTORY_EVENTS } from '../config';",
      "import { RunState } from './run-state';",
      "import { RunSession } from './session';",
      'export type Activities = SessionActivities;',
      'export const used = [approveSignal, resolveInput, CONTINUE_AS_NEW_HISTORY_EVENTS, RunState, RunSession];',
      'export async function ok(): Promise<string> {',
      '  await sleep(1);',
      '  await Promise.all([sleep(1), sleep(2)]);',
      '  const at = new Date().toISOString();',
      '  const again = new Date(at).toISOString();',
      '  const hour = new Date(at).getUTCHours();',
      '  return [at, again, hour, uuid4(), workflowInfo().workflowId, Math.max(1, 2)].join();',
      '}',
      '',
    ].join('\n'),
  };

  const input = [
    { filePath: BYPASS_FILE, code: [HEADER, ...BYPASSES.map((b) => b.code), ''].join('\n') },
    ...OTHER_FILES.map(({ filePath, code }) => ({ filePath, code })),
    ALLOWED,
  ];
  const lintRun = besideEslint(() => node([LINT_TEXT], JSON.stringify(input)));
  let results: Map<string, Message[]>;
  beforeAll(async () => {
    const { code, stdout, stderr } = await lintRun;
    if (code !== 0) throw new Error(`lint-text.mjs exited with ${code}:\n${stderr}`);
    results = new Map((JSON.parse(stdout) as FileResult[]).map((r) => [r.filePath, r.messages]));
  }, 180_000);

  test.each(BYPASSES.map((b, i) => ({ ...b, line: lineOf(i) })))('$name is reported by $rule', ({ line, rule }) => {
    const onLine = (results.get(BYPASS_FILE) ?? []).filter((m) => m.line === line);
    expect(onLine.map((m) => m.ruleId)).toContain(rule);
  });

  test('the file of bypasses parses, and every report says why', () => {
    const messages = results.get(BYPASS_FILE) ?? [];
    expect(messages.filter((m) => m.ruleId === null)).toEqual([]);
    const restricted = messages.filter((m) => /^no-restricted-|\/no-restricted-/.test(m.ruleId ?? ''));
    for (const m of restricted) expect(m.message).toContain('see src/workflows/README.md');
  });

  test.each(OTHER_FILES)('$filePath is held to the workflow rules ($rule)', ({ filePath, rule }) => {
    expect((results.get(filePath) ?? []).map((m) => m.ruleId)).toContain(rule);
  });

  test('what workflow code does write is not reported', () => {
    expect(describeFindings([{ filePath: ALLOWED.filePath, messages: results.get(ALLOWED.filePath) ?? [] }])).toEqual([]);
  });
});
