/**
 * Sizes of functions and files, for the shape test (test/unit/workflows/shape.test.ts)
 * and for people: `node dist/dev/scripts/function-sizes.js [dir] [top]` prints
 * the longest functions and files under `dir` (default `src/workflows`).
 * Lines are counted from a function's first to its last line, comments included.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** One function, method, arrow function or accessor, and its length in lines. */
export interface FunctionSize {
  /** Path relative to the working directory. */
  file: string;
  /** Name (`Class.method`, `outer > inner`, `(anonymous)`). */
  name: string;
  /** 1-based first line. */
  line: number;
  lines: number;
}

/** Every `.ts` file under `dir`, recursively, sorted. */
export function tsFiles(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((entry) => {
      const full = path.join(dir, entry);
      if (statSync(full).isDirectory()) return tsFiles(full);
      return full.endsWith('.ts') && !full.endsWith('.d.ts') ? [full] : [];
    })
    .sort();
}

/** Every function-like node of `file` with its length. Nested functions are listed on their own and count inside their parent too. */
export function functionSizes(file: string): FunctionSize[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: FunctionSize[] = [];
  const lineOf = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node: ts.Node, names: string[]): void => {
    let scope = names;
    if (ts.isClassDeclaration(node) && node.name) scope = [...names, node.name.text];
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const name = nameOf(node);
      const first = lineOf(node.getStart(source));
      out.push({
        file: path.relative(process.cwd(), file),
        name: [...names, name].join(names.length > 0 && ts.isMethodDeclaration(node) ? '.' : ' > '),
        line: first,
        lines: lineOf(node.getEnd()) - first + 1,
      });
      scope = [...names, name];
    }
    ts.forEachChild(node, (child) => visit(child, scope));
  };
  visit(source, []);
  return out;
}

function nameOf(node: ts.SignatureDeclaration): string {
  if (node.name && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) return node.name.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '(anonymous)';
}

/** A `let` or `var` declared at a module's top level: state every caller of the module shares. */
export interface ModuleVariable {
  /** Path relative to the working directory. */
  file: string;
  name: string;
  /** 1-based line. */
  line: number;
  kind: 'let' | 'var';
}

/**
 * The `let` and `var` bindings at the top level of `file` (its text, or `text` when given), a
 * destructuring's names included; those inside functions, classes and blocks are not listed.
 */
export function moduleVariables(file: string, text: string = readFileSync(file, 'utf8')): ModuleVariable[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const out: ModuleVariable[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const flags = statement.declarationList.flags;
    if (flags & (ts.NodeFlags.Const | ts.NodeFlags.Using)) continue;
    const kind = flags & ts.NodeFlags.Let ? 'let' : 'var';
    for (const d of statement.declarationList.declarations) {
      const line = source.getLineAndCharacterOfPosition(d.getStart(source)).line + 1;
      out.push({ file: path.relative(process.cwd(), file), name: d.name.getText(source), line, kind });
    }
  }
  return out;
}

/** Lines of a file (a final newline does not start a line). */
export function fileLines(file: string): number {
  return readFileSync(file, 'utf8').replace(/\n$/, '').split('\n').length;
}

if (require.main === module) {
  const dir = path.resolve(process.argv[2] ?? 'src/workflows');
  const top = Number(process.argv[3] ?? 10);
  const files = tsFiles(dir);
  const fns = files.flatMap(functionSizes).sort((a, b) => b.lines - a.lines);
  console.log(`longest functions under ${path.relative(process.cwd(), dir) || dir}:`);
  for (const f of fns.slice(0, top)) console.log(`  ${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
  console.log('largest files:');
  for (const f of files
    .map((file) => ({ file, lines: fileLines(file) }))
    .sort((a, b) => b.lines - a.lines)
    .slice(0, top)) {
    console.log(`  ${String(f.lines).padStart(4)}  ${path.relative(process.cwd(), f.file)}`);
  }
}
