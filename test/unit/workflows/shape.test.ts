/**
 * The shape that keeps the workflow readable (src/workflows/README.md): no
 * function in src/workflows/ longer than 80 lines, the `agentRun` body on
 * one screen, and the one-way arrows of docs/architecture.md (the contract
 * imports nothing of the CLI, the workflow, the activities or the session;
 * the workflow imports the activities only as types).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { functionSizes, tsFiles } from '../../../src/scripts/function-sizes';

const SRC = path.resolve(__dirname, '../../../src');
const MAX_FUNCTION_LINES = 80;
/** A screen: the loop and its handlers, no more. */
const MAX_AGENT_RUN_LINES = 30;

/** `[specifier, typeOnly]` of every import and re-export of a file. */
function importsOf(file: string): Array<[string, boolean]> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: Array<[string, boolean]> = [];
  for (const stmt of source.statements) {
    if (ts.isImportDeclaration(stmt)) {
      const clause = stmt.importClause;
      const named = clause?.namedBindings;
      const allTypes =
        !!named && ts.isNamedImports(named) && !clause?.name && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
      out.push([(stmt.moduleSpecifier as ts.StringLiteral).text, !!clause?.isTypeOnly || allTypes]);
    } else if (ts.isExportDeclaration(stmt) && stmt.moduleSpecifier) {
      out.push([(stmt.moduleSpecifier as ts.StringLiteral).text, stmt.isTypeOnly]);
    }
  }
  return out;
}

interface LocalImport {
  file: string;
  target: string;
  typeOnly: boolean;
}

/** Local imports of the files under `root`/`dir`, with the importing file and the imported path relative to `root` (src/, or a fixture's). */
function localImports(dir: string, root = SRC): LocalImport[] {
  return tsFiles(path.join(root, dir)).flatMap((file) =>
    importsOf(file)
      .filter(([spec]) => spec.startsWith('.'))
      .map(([spec, typeOnly]) => ({
        file: path.relative(root, file),
        target: path.relative(root, path.resolve(path.dirname(file), spec)),
        typeOnly,
      })),
  );
}

// The arrows of docs/architecture.md, each as the imports that go against it.
const contractArrowsWrong = (root = SRC): LocalImport[] =>
  localImports('contract', root).filter(({ target }) =>
    /^(cli|workflows|activities|session|policy|bench|testing|model-server)(\/|$)/.test(target),
  );
const workflowArrowsWrong = (root = SRC): LocalImport[] =>
  localImports('workflows', root).filter(
    ({ target, typeOnly }) => (target.startsWith('activities') && !typeOnly) || /^(cli|session|policy|bench|testing)(\/|$)/.test(target),
  );
const cliArrowsWrong = (root = SRC): LocalImport[] =>
  localImports('cli', root).filter(
    ({ target, typeOnly }) => (target.startsWith('workflows') || target.startsWith('activities')) && !typeOnly,
  );

/** A tree of src/ that breaks every arrow, each in a way an import statement search does not see. */
const BAD_SHAPE = path.resolve(__dirname, '../../fixtures/bad-shape/src');

describe('the workflow as named parts', () => {
  test(`no function in src/workflows/ is longer than ${MAX_FUNCTION_LINES} lines`, () => {
    const long = tsFiles(path.join(SRC, 'workflows'))
      .flatMap(functionSizes)
      .filter((f) => f.lines > MAX_FUNCTION_LINES)
      .map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`);
    expect(long).toEqual([]);
  });

  test(`agentRun fits on a screen (${MAX_AGENT_RUN_LINES} lines)`, () => {
    const agentRun = functionSizes(path.join(SRC, 'workflows', 'agent-run.ts')).find((f) => f.name === 'agentRun');
    expect(agentRun).toBeDefined();
    expect(agentRun!.lines).toBeLessThanOrEqual(MAX_AGENT_RUN_LINES);
  });

  test('the contract imports nothing of the CLI, the workflow, the activities or the session', () => {
    expect(contractArrowsWrong()).toEqual([]);
  });

  test('the workflow imports the activities only as types (for proxyActivities), and never the CLI or the session library', () => {
    expect(workflowArrowsWrong()).toEqual([]);
    // The check sees the type imports that are allowed.
    expect(localImports('workflows').some(({ target, typeOnly }) => target.startsWith('activities') && typeOnly)).toBe(true);
  });

  test('the CLI reaches the workflow only through the contract (and `import type` of the workflow function for the client)', () => {
    expect(cliArrowsWrong()).toEqual([]);
  });

  test('the arrow checks see import-equals, require() and import(), and take src/ modules by allow-list', () => {
    const wrong = (imports: LocalImport[]): string[] => imports.map(({ file, target }) => `${file} -> ${target}`);
    expect(wrong(contractArrowsWrong(BAD_SHAPE))).toEqual([
      'contract/bad.ts -> settings',
      'contract/bad.ts -> temporal',
      'contract/bad.ts -> session',
    ]);
    expect(wrong(workflowArrowsWrong(BAD_SHAPE))).toEqual([
      'workflows/bad.ts -> settings',
      'workflows/bad.ts -> activities/claude',
      'workflows/bad.ts -> activities/session',
      'workflows/bad.ts -> policy',
    ]);
    expect(wrong(cliArrowsWrong(BAD_SHAPE))).toEqual(['cli/bad.ts -> workflows/agent-run']);
  });

  test('the size check counts what it should', () => {
    const sizes = functionSizes(path.join(SRC, 'workflows', 'agent-run.ts'));
    expect(sizes.map((f) => f.name)).toEqual(expect.arrayContaining(['agentRun', 'takeTurn', 'finish']));
    expect(sizes.every((f) => f.lines >= 1)).toBe(true);
  });
});
