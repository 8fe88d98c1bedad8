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

describe('eslint', () => {
  test('the project has no lint errors and no warnings', async () => {
    const { code, stdout, stderr } = await node([ESLINT, '--format', 'json', '--max-warnings', '0', '.']);
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

describe('prettier', () => {
  test('every file Prettier covers is formatted', async () => {
    // --list-different: exit 0 when all are formatted, 1 with their names, 2 on an error.
    const { code, stdout, stderr } = await node([PRETTIER, '--list-different', '.']);
    if (code !== 0 && code !== 1) throw new Error(`prettier exited with ${code}:\n${stderr}`);
    const unformatted = stdout.split('\n').filter(Boolean);
    if (unformatted.length > 0) {
      throw new Error(`${unformatted.length} files are not formatted (npm run format fixes them):\n${unformatted.join('\n')}`);
    }
  }, 120_000);
});

describe('workflow determinism rules', () => {
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

  let results: Map<string, Message[]>;
  beforeAll(async () => {
    const input = [...CASES.map((c) => ({ filePath: c.filePath, code: SOURCE.replaceAll('<src>', c.src) })), SIBLINGS];
    const { code, stdout, stderr } = await node([LINT_TEXT], JSON.stringify(input));
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
