/**
 * C15: workflow code stays deterministic. Walks the import graph from
 * src/workflows/index.ts (value imports only; `import type` is erased),
 * however the imports are written (module-imports.ts), and fails on any
 * package but Temporal's workflow-safe ones and zod, on any module of src/
 * that is not workflow code or outside src/, on modules loaded by a computed
 * name, and on clock reads that measure durations. It also fails on what the
 * SDK's sandbox does not pin (workflowInfo().unsafe, the worker's time zone
 * and locale) and on globals the sandbox does not define. The build's
 * workflow bundler (`npm run build`) fails on Node modules as a second line
 * (not on the Anthropic SDK, which bundles and throws on load).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { moduleImports } from './module-imports';

const SRC = path.resolve(__dirname, '../../../src');
const ALLOWED_PACKAGES = ['@temporalio/workflow', '@temporalio/common', 'zod'];
/** What the sandbox runs from src/ (src/workflows/README.md): anything else a value import reaches is a finding. */
const WORKFLOW_CODE = [path.join(SRC, 'workflows'), path.join(SRC, 'contract'), path.join(SRC, 'shared'), path.join(SRC, 'config.ts')];
/** Node and web globals the workflow sandbox does not define: a workflow task that touches one fails, every time. */
const MISSING_GLOBALS = ['process', 'Buffer', 'setImmediate', 'performance', 'crypto', 'queueMicrotask', 'structuredClone'];
/** Date methods in local time and the locale-dependent methods: the worker's TZ and LANG reach the sandbox. MAINTENANCE: the same list as in eslint.config.mjs (independent guards on purpose). */
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
const NEW_DATE =
  "uses new Date() other than as new Date().toISOString() (as a number it measures durations, as a string it is in the worker's time zone)";
/** TypeScript's module kinds by the name they are imported under (`./x.js` is x.ts). */
const TS_FOR_JS: Record<string, string> = { '.js': '.ts', '.mjs': '.mts', '.cjs': '.cts' };

interface Finding {
  file: string;
  problem: string;
}

/** The TypeScript module `spec` names from `from`, as tsc resolves it; undefined when there is none (a .js file, a package folder). */
function resolveLocal(from: string, spec: string): string | undefined {
  const base = path.resolve(path.dirname(from), spec);
  const ext = path.extname(base);
  const candidates = [
    ...(TS_FOR_JS[ext] ? [base.slice(0, -ext.length) + TS_FOR_JS[ext]] : []),
    ...['.ts', '.mts', '.cts'].map((e) => base + e),
    path.join(base, 'index.ts'),
  ];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

/** The name this node declares (a variable, parameter, function, class, import binding, property or member), if any. */
function declaredName(node: ts.Node): ts.Node | undefined {
  const declares =
    ts.isVariableDeclaration(node) ||
    ts.isParameter(node) ||
    ts.isBindingElement(node) ||
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isClassDeclaration(node) ||
    ts.isClassExpression(node) ||
    ts.isEnumDeclaration(node) ||
    ts.isModuleDeclaration(node) ||
    ts.isImportClause(node) ||
    ts.isImportSpecifier(node) ||
    ts.isNamespaceImport(node) ||
    ts.isImportEqualsDeclaration(node) ||
    ts.isPropertyAssignment(node) ||
    ts.isPropertyDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isEnumMember(node);
  return declares ? node.name : undefined;
}

/** A name read as a variable here: not a property name (`x.crypto`, `{ crypto: 1 }`), a declaration or a type. */
function isValueReference(id: ts.Identifier): boolean {
  const p = id.parent;
  if (ts.isPropertyAccessExpression(p) && p.name === id) return false;
  if (ts.isQualifiedName(p) && p.right === id) return false;
  if (ts.isBindingElement(p) && p.propertyName === id) return false;
  return declaredName(p) !== id;
}

const isDate = (node: ts.Node): boolean => ts.isIdentifier(node) && node.text === 'Date';

/** What the syntax tree says about `source`, past what a search of its text sees. */
function codeProblems(source: ts.SourceFile): string[] {
  // A local of the same name (`const crypto = ...`) is not the global.
  const declared = new Set<string>();
  const collect = (node: ts.Node): void => {
    const name = declaredName(node);
    if (name && ts.isIdentifier(name)) declared.add(name.text);
    ts.forEachChild(node, collect);
  };
  collect(source);
  const problems: string[] = [];
  const zone = (what: string): void => void problems.push(`depends on the worker's time zone or locale (${what})`);
  const visit = (node: ts.Node): void => {
    if (ts.isTypeNode(node)) return;
    // x.name, x['name'], and { name } = x
    const member = ts.isPropertyAccessExpression(node)
      ? node.name.text
      : ts.isElementAccessExpression(node) && ts.isStringLiteralLike(node.argumentExpression)
        ? node.argumentExpression.text
        : undefined;
    const bound = ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent) ? (node.propertyName ?? node.name) : undefined;
    if (member === 'unsafe' || (bound && ts.isIdentifier(bound) && bound.text === 'unsafe')) {
      problems.push('reads workflowInfo().unsafe (the wall clock, fresh randomness, isReplaying: not the same on replay)');
    }
    if (member && ZONE_AND_LOCALE_METHODS.includes(member)) zone(member);
    if (ts.isPropertyAccessExpression(node) && member === 'parse' && isDate(node.expression)) zone('Date.parse');
    if (ts.isNewExpression(node) && isDate(node.expression)) {
      const args = node.arguments?.length ?? 0;
      if (args > 1) zone('new Date(year, month, ...)');
      // The README's one use of the current time is a timestamp: new Date().toISOString().
      const asTimestamp = ts.isPropertyAccessExpression(node.parent) && node.parent.name.text === 'toISOString';
      if (args === 0 && !asTimestamp) problems.push(NEW_DATE);
    }
    if (ts.isIdentifier(node) && !declared.has(node.text) && isValueReference(node)) {
      if (node.text === 'globalThis' || node.text === 'global') problems.push(`reaches the global object (${node.text})`);
      if (MISSING_GLOBALS.includes(node.text)) problems.push(`uses ${node.text}, which the workflow sandbox does not define`);
      if (node.text === 'Intl') zone('Intl');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

/**
 * Every problem in the workflow import graph starting at `entry`. `workflowCode`: the folders and files that may be
 * reached (the fixtures pass their own folder).
 */
export function workflowProblems(entry: string, { workflowCode = WORKFLOW_CODE } = {}): { files: string[]; findings: Finding[] } {
  const seen = new Set<string>();
  const findings: Finding[] = [];
  const isWorkflowCode = (file: string): boolean => workflowCode.some((root) => file === root || file.startsWith(root + path.sep));
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const rel = path.relative(SRC, file);
    const problem = (p: string): void => void findings.push({ file: rel, problem: p });
    if (!isWorkflowCode(file)) problem('is not workflow code (src/workflows/, src/contract/, src/shared/, src/config.ts)');
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    // Comments may mention what is forbidden; scan the code only.
    const text = ts.createPrinter({ removeComments: true }).printFile(source);
    // Timestamps (`new Date().toISOString()`) are fine; numbers read off the clock to subtract are not.
    const clockRead =
      /\b(Date\.now|performance\.now|process\.hrtime)\s*\(|\bnew Date\(\s*\)\s*\.(getTime|valueOf)\s*\(|[-+]\s*new Date\(\s*\)/;
    if (clockRead.test(text)) problem('reads a clock to measure time (measure durations in activities)');
    if (/\bprocess\.env\b/.test(text)) problem('reads process.env');
    if (/\bMath\.random\s*\(/.test(text)) problem('uses Math.random (use uuid4 or workflow randomness)');
    codeProblems(source).forEach(problem);
    for (const { spec, typeOnly } of moduleImports(source)) {
      if (typeOnly) continue;
      if (spec === null) problem('loads a module by a computed name (import() or require() of an expression)');
      else if (!spec.startsWith('.')) {
        if (!ALLOWED_PACKAGES.includes(spec)) problem(`imports ${spec}`);
      } else {
        const target = resolveLocal(file, spec);
        if (target) visit(target);
        else problem(`imports ${spec}, which is no TypeScript module (workflow code is TypeScript, and packages go by name)`);
      }
    }
  };
  visit(entry);
  return { files: [...seen].map((f) => path.relative(SRC, f)), findings };
}

describe('workflow sandbox rules (C15)', () => {
  // The fixtures stand in for workflow code here: what they reach outside their folder is not.
  const FIXTURES = path.resolve(__dirname, '../../fixtures/bad-workflow');
  const fixture = (name: string): Finding[] => workflowProblems(path.join(FIXTURES, name), { workflowCode: [FIXTURES] }).findings;

  test('the workflow code reaches no Node module, SDK, execa, clock or environment, even through helpers', () => {
    const { files, findings } = workflowProblems(path.join(SRC, 'workflows', 'index.ts'));
    expect(files).toEqual(expect.arrayContaining(['workflows/agent-run.ts', 'config.ts', 'contract/index.ts']));
    expect(findings).toEqual([]);
    // The contract is shared; the activities are reached only through `import type` (for proxyActivities).
    expect(files.filter((f) => f.startsWith('activities/') || f.startsWith('cli/') || f.startsWith('session/'))).toEqual([]);
  });

  test('the check catches a Node import reached through a shared helper, and Date.now() durations', () => {
    expect(fixture('index.ts')).toEqual(
      expect.arrayContaining([
        { file: expect.stringContaining('helper.ts'), problem: 'imports node:fs' },
        { file: expect.stringContaining('helper.ts'), problem: 'imports @anthropic-ai/sdk' },
        { file: expect.stringContaining('index.ts'), problem: 'reads a clock to measure time (measure durations in activities)' },
      ]),
    );
  });

  test('the check catches durations measured with new Date(), and lets timestamps through', () => {
    expect(fixture('date-duration.ts')).toEqual([
      { file: expect.stringContaining('date-duration.ts'), problem: 'reads a clock to measure time (measure durations in activities)' },
      // new Date().getTime() and +new Date()
      { file: expect.stringContaining('date-duration.ts'), problem: NEW_DATE },
      { file: expect.stringContaining('date-duration.ts'), problem: NEW_DATE },
    ]);
    // agent-run.ts stamps decisions with new Date().toISOString() and is clean (first test).
  });

  test('the check sees imports however they are written, follows .cts modules by their .cjs name, and names code that is not workflow code', () => {
    expect(fixture('imports.ts')).toEqual(
      expect.arrayContaining([
        // import fs = require(/* comment */ 'node:fs')
        { file: expect.stringContaining('imports.ts'), problem: 'imports node:fs' },
        {
          file: expect.stringContaining('imports.ts'),
          problem: 'loads a module by a computed name (import() or require() of an expression)',
        },
        { file: expect.stringContaining('evil.cts'), problem: 'reads process.env' },
        {
          file: expect.stringContaining('not-workflow-code.ts'),
          problem: 'is not workflow code (src/workflows/, src/contract/, src/shared/, src/config.ts)',
        },
      ]),
    );
  });

  test('the check catches workflowInfo().unsafe, which the sandbox does not pin', () => {
    const unsafe = fixture('unsafe.ts').filter((f) => f.problem.startsWith('reads workflowInfo().unsafe'));
    expect(unsafe).toHaveLength(2); // .unsafe and { unsafe }
  });

  test("the check catches what depends on the worker's time zone or locale, which reach the sandbox", () => {
    expect(fixture('zone.ts').map((f) => f.problem)).toEqual(
      expect.arrayContaining([
        ...['getHours', 'Intl', 'localeCompare', 'new Date(year, month, ...)'].map(
          (what) => `depends on the worker's time zone or locale (${what})`,
        ),
        NEW_DATE, // String(new Date())
      ]),
    );
  });

  test('the check catches the global object and the globals the sandbox does not define', () => {
    expect(fixture('globals.ts').map((f) => f.problem)).toEqual(
      expect.arrayContaining([
        'reaches the global object (globalThis)',
        ...['performance', 'crypto', 'structuredClone'].map((name) => `uses ${name}, which the workflow sandbox does not define`),
      ]),
    );
  });
});
