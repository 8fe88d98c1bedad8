/**
 * RunState owns its changes (src/workflows/README.md, "Who writes the
 * state"): outside src/workflows/run-state.ts, no code assigns to, increments,
 * deletes or mutates in place (`push`, `splice`, ...) anything reached through
 * a RunState, however deep (`state.pause = …`, `state.rules.push(…)`,
 * `state.approval.decision = …`). The getters' read-only types make the
 * compiler say so too; this test keeps it so if a field goes public again.
 * Types come from the TypeScript checker, so a `state` by any name counts.
 */
import path from 'node:path';
import ts from 'typescript';

const WORKFLOWS = path.resolve(__dirname, '../../../src/workflows');
const OWNER = path.join(WORKFLOWS, 'run-state.ts');
const PROBE = path.join(WORKFLOWS, '__probe__.ts');
const ARRAYS = new Set(['Array', 'ReadonlyArray']);
const MUTATORS = new Set(['push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin']);
const ASSIGNMENTS = new Set([
  ts.SyntaxKind.EqualsToken,
  ts.SyntaxKind.PlusEqualsToken,
  ts.SyntaxKind.MinusEqualsToken,
  ts.SyntaxKind.AsteriskEqualsToken,
  ts.SyntaxKind.SlashEqualsToken,
  ts.SyntaxKind.QuestionQuestionEqualsToken,
  ts.SyntaxKind.BarBarEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandEqualsToken,
]);

/** A program over src/workflows/ (and what it imports), with `probe` as the text of one more file of that folder when given. */
function program(probe?: string): ts.Program {
  const options: ts.CompilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, strict: true, noEmit: true };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  const exists = host.fileExists.bind(host);
  const getSource = host.getSourceFile.bind(host);
  if (probe !== undefined) {
    host.readFile = (f) => (path.resolve(f) === PROBE ? probe : read(f));
    host.fileExists = (f) => path.resolve(f) === PROBE || exists(f);
    host.getSourceFile = (f, lang, ...rest) =>
      path.resolve(f) === PROBE ? ts.createSourceFile(f, probe, lang) : getSource(f, lang, ...rest);
  }
  const roots = ts.sys.readDirectory(WORKFLOWS, ['.ts']).concat(probe !== undefined ? [PROBE] : []);
  return ts.createProgram(roots, options, host);
}

/** Whether `node` (a write's target) is reached through a RunState: it or an object on its property chain is one. */
function throughRunState(checker: ts.TypeChecker, node: ts.Expression): boolean {
  let e: ts.Expression = node;
  for (;;) {
    while (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e)) e = e.expression;
    if (!ts.isPropertyAccessExpression(e) && !ts.isElementAccessExpression(e)) return false;
    const owner = e.expression;
    if (checker.getTypeAtLocation(owner).getSymbol()?.getName() === 'RunState') return true;
    e = owner;
  }
}

/** Writes through a RunState in the files of `prog` under src/workflows/ but run-state.ts, as `file:line: text`. */
function writesOutsideOwner(prog: ts.Program): string[] {
  const checker = prog.getTypeChecker();
  const found: string[] = [];
  for (const sf of prog.getSourceFiles()) {
    const file = path.resolve(sf.fileName);
    if (path.dirname(file) !== WORKFLOWS || file === OWNER) continue;
    const report = (target: ts.Expression, at: ts.Node): void => {
      if (!throughRunState(checker, target)) return;
      const line = sf.getLineAndCharacterOfPosition(at.getStart(sf)).line + 1;
      found.push(`${path.basename(file)}:${line}: ${at.getText(sf)}`);
    };
    const visit = (n: ts.Node): void => {
      if (ts.isBinaryExpression(n) && ASSIGNMENTS.has(n.operatorToken.kind)) report(n.left, n);
      else if (
        (ts.isPrefixUnaryExpression(n) || ts.isPostfixUnaryExpression(n)) &&
        (n.operator === ts.SyntaxKind.PlusPlusToken || n.operator === ts.SyntaxKind.MinusMinusToken)
      )
        report(n.operand, n);
      else if (ts.isDeleteExpression(n)) report(n.expression, n);
      else if (
        ts.isCallExpression(n) &&
        ts.isPropertyAccessExpression(n.expression) &&
        MUTATORS.has(n.expression.name.text) &&
        ARRAYS.has(checker.getTypeAtLocation(n.expression.expression).getSymbol()?.getName() ?? '')
      )
        report(n.expression.expression, n);
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return found;
}

/** Writes the check must find: the probe file's lines 5 to 10 (lines 3 and 4 go through `any`, which the compiler cannot see either). */
const PROBE_TEXT = `import type { RunState } from './run-state';
export function probe(state: RunState, s2: RunState, x: any): void {
  x.pause = null;
  (state as any).pause = null;
  state.pause = null;
  s2.turns++;
  state.rules.push(x);
  state.approval.decision = null;
  delete state.inflight;
  state.usage.inputTokens += 1;
  state.conversation.push(x);
}
`;

/** One program for both tests (type-checking the folder takes seconds): src/workflows/ and the probe. */
let found: string[];
beforeAll(() => {
  found = writesOutsideOwner(program(PROBE_TEXT));
});

test("the check sees writes through a RunState, by any name and however deep, and not calls of its parts' own methods", () => {
  expect(found.filter((w) => w.startsWith('__probe__.ts'))).toEqual([
    '__probe__.ts:5: state.pause = null',
    '__probe__.ts:6: s2.turns++',
    '__probe__.ts:7: state.rules.push(x)',
    '__probe__.ts:8: state.approval.decision = null',
    '__probe__.ts:9: delete state.inflight',
    '__probe__.ts:10: state.usage.inputTokens += 1',
  ]);
});

test('no code in src/workflows/ but run-state.ts writes through a RunState', () => {
  expect(found.filter((w) => !w.startsWith('__probe__.ts'))).toEqual([]);
});
