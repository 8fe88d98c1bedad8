/**
 * C15: workflow code stays deterministic. Walks the import graph from
 * src/workflows/index.ts (value imports only; `import type` is erased) and
 * fails on anything outside src/ but Temporal's workflow-safe packages and
 * zod, and on clock reads that measure durations. The build's workflow
 * bundler (`npm run build`) fails on Node modules as a second line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(__dirname, '../../../src');
const ALLOWED_PACKAGES = ['@temporalio/workflow', '@temporalio/common', 'zod'];

interface Finding {
  file: string;
  problem: string;
}

function valueImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  for (const stmt of source.statements) {
    if (ts.isImportDeclaration(stmt)) {
      const clause = stmt.importClause;
      const typeOnly =
        clause?.isTypeOnly ||
        (clause?.namedBindings &&
          ts.isNamedImports(clause.namedBindings) &&
          !clause.name &&
          clause.namedBindings.elements.length > 0 &&
          clause.namedBindings.elements.every((e) => e.isTypeOnly));
      if (!typeOnly) out.push((stmt.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(stmt) && stmt.moduleSpecifier && !stmt.isTypeOnly) {
      out.push((stmt.moduleSpecifier as ts.StringLiteral).text);
    }
  }
  const text = source.getFullText();
  for (const m of text.matchAll(/\brequire\(\s*['"]([^'"]+)['"]\s*\)|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1] ?? m[2]!);
  return out;
}

function resolveLocal(from: string, spec: string): string {
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) {
    try {
      readFileSync(candidate);
      return candidate;
    } catch {
      /* next */
    }
  }
  throw new Error(`cannot resolve ${spec} from ${from}`);
}

/** Every problem in the workflow import graph starting at `entry`. */
export function workflowProblems(entry: string): { files: string[]; findings: Finding[] } {
  const seen = new Set<string>();
  const findings: Finding[] = [];
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const rel = path.relative(SRC, file);
    // Comments may mention what is forbidden; scan the code only.
    const text = ts
      .createPrinter({ removeComments: true })
      .printFile(ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true));
    // Timestamps (`new Date().toISOString()`) are fine; numbers read off the clock to subtract are not.
    const clockRead =
      /\b(Date\.now|performance\.now|process\.hrtime)\s*\(|\bnew Date\(\s*\)\s*\.(getTime|valueOf)\s*\(|[-+]\s*new Date\(\s*\)/;
    if (clockRead.test(text)) findings.push({ file: rel, problem: 'reads a clock to measure time (measure durations in activities)' });
    if (/\bprocess\.env\b/.test(text)) findings.push({ file: rel, problem: 'reads process.env' });
    if (/\bMath\.random\s*\(/.test(text)) findings.push({ file: rel, problem: 'uses Math.random (use uuid4 or workflow randomness)' });
    for (const spec of valueImports(file)) {
      if (spec.startsWith('.')) visit(resolveLocal(file, spec));
      else if (!ALLOWED_PACKAGES.includes(spec)) findings.push({ file: rel, problem: `imports ${spec}` });
    }
  };
  visit(entry);
  return { files: [...seen].map((f) => path.relative(SRC, f)), findings };
}

describe('workflow sandbox rules (C15)', () => {
  test('the workflow code reaches no Node module, SDK, execa, clock or environment, even through helpers', () => {
    const { files, findings } = workflowProblems(path.join(SRC, 'workflows', 'index.ts'));
    expect(files).toEqual(expect.arrayContaining(['workflows/agent-run.ts', 'config.ts', 'contract/index.ts']));
    expect(findings).toEqual([]);
    // The contract is shared; the activities are reached only through `import type` (for proxyActivities).
    expect(files.filter((f) => f.startsWith('activities/') || f.startsWith('cli/') || f.startsWith('session/'))).toEqual([]);
  });

  test('the check catches a Node import reached through a shared helper, and Date.now() durations', () => {
    const fixture = path.resolve(__dirname, '../../fixtures/bad-workflow/index.ts');
    const { findings } = workflowProblems(fixture);
    expect(findings).toEqual(
      expect.arrayContaining([
        { file: expect.stringContaining('helper.ts'), problem: 'imports node:fs' },
        { file: expect.stringContaining('helper.ts'), problem: 'imports @anthropic-ai/sdk' },
        { file: expect.stringContaining('index.ts'), problem: 'reads a clock to measure time (measure durations in activities)' },
      ]),
    );
  });

  test('the check catches durations measured with new Date(), and lets timestamps through', () => {
    const { findings } = workflowProblems(path.resolve(__dirname, '../../fixtures/bad-workflow/date-duration.ts'));
    expect(findings).toEqual([
      { file: expect.stringContaining('date-duration.ts'), problem: 'reads a clock to measure time (measure durations in activities)' },
    ]);
    // agent-run.ts stamps decisions with new Date().toISOString() and is clean (first test).
  });

  // The fixtures stand in for workflow code here: what they reach outside their folder is not.
  const FIXTURES = path.resolve(__dirname, '../../fixtures/bad-workflow');
  const fixture = (name: string): Finding[] => workflowProblems(path.join(FIXTURES, name), { workflowCode: [FIXTURES] }).findings;

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
          problem: 'is not workflow code (src/workflows/, src/contract/, src/config.ts)',
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
      expect.arrayContaining(
        ['getHours', 'Intl', 'localeCompare', 'new Date(year, month, ...)'].map(
          (what) => `depends on the worker's time zone or locale (${what})`,
        ),
      ),
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
