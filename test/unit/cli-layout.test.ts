/**
 * How src/cli/ is laid out: one command per file under src/cli/commands/,
 * none importing another (what two commands share lives in src/cli/render/,
 * src/cli/follow.ts and the other modules beside them), and no module-level
 * `let`/`var` anywhere in src/cli/: what varies (how many output lines to
 * keep, ...) is a parameter, not a toggle that one command sets for another.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'src', 'cli');
const COMMANDS = path.join(CLI, 'commands');

/** Every .ts file under `dir`, recursively. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

/** The module specifiers `source` names: imports and re-exports (type-only ones too), dynamic `import()` and `require()`. */
function specifiersOf(source: string): string[] {
  const sf = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
      found.push(node.moduleSpecifier.text);
    else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    )
      found.push(node.arguments[0].text);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The other commands a command file at `file` imports, as paths relative to src/cli/commands/. */
function commandImports(file: string, source: string): string[] {
  return specifiersOf(source)
    .filter((s) => s.startsWith('.'))
    .map((s) => path.relative(COMMANDS, path.resolve(path.dirname(file), s)))
    .filter((rel) => !rel.startsWith('..') && !path.isAbsolute(rel));
}

/** `let`/`var` declarations at the top level of `source`, as `name (line N)`. */
function moduleLevelMutables(source: string): string[] {
  const sf = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  return sf.statements
    .filter(ts.isVariableStatement)
    .flatMap((st) =>
      (st.declarationList.flags & ts.NodeFlags.Const) !== 0
        ? []
        : st.declarationList.declarations.map(
            (d) => `${d.name.getText(sf)} (line ${sf.getLineAndCharacterOfPosition(d.getStart(sf)).line + 1})`,
          ),
    );
}

describe('the checks see what they look for', () => {
  const file = path.join(COMMANDS, 'status.ts');
  test('an import of another command, in any form', () => {
    expect(commandImports(file, "import { ruleLines } from './steer';")).toEqual(['steer']);
    expect(commandImports(file, "import type { DecideOptions } from './decide';")).toEqual(['decide']);
    expect(commandImports(file, "export { budgetPauseLine } from '../commands/extend';")).toEqual(['extend']);
    expect(commandImports(file, "async function f() { await import('./watch'); }")).toEqual(['watch']);
    expect(commandImports(file, "import { printLines } from '../render/text';\nimport { x } from '../../client';")).toEqual([]);
  });
  test('a module-level let or var, not a const or a let inside a function', () => {
    expect(moduleLevelMutables('export let a = 1;\nvar b;\nconst c = 2;\nfunction f() { let d = 3; return d; }')).toEqual([
      'a (line 1)',
      'b (line 2)',
    ]);
  });
});

test('no command in src/cli/commands/ imports another command', () => {
  const offenders = tsFiles(COMMANDS).flatMap((f) =>
    commandImports(f, readFileSync(f, 'utf8')).map((to) => `${path.relative(COMMANDS, f)} imports ${to}`),
  );
  expect(offenders).toEqual([]);
});

test('no module in src/cli/ has a module-level let or var', () => {
  const offenders = tsFiles(CLI).flatMap((f) => moduleLevelMutables(readFileSync(f, 'utf8')).map((v) => `${path.relative(ROOT, f)}: ${v}`));
  expect(offenders).toEqual([]);
});
