/**
 * C23: every Update validator of the workflow is synchronous. The SDK runs a
 * validator before the Update enters history and does not await it: an
 * `async` validator returns a promise, which never throws there, so every
 * request would be accepted. Checked with the type checker on each
 * `setHandler(…, { validator })` in src/workflows: the validator's return
 * type is `void`, and neither it nor the function it calls is `async`.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const DIR = path.resolve(__dirname, '../../../src/workflows');
const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.ts'))
  .map((f) => path.join(DIR, f));
const OPTIONS: ts.CompilerOptions = {
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  esModuleInterop: true,
  skipLibCheck: true,
};

/** Each validator in `fileNames` of `program`: where it is, its return type, and whether it or the function it calls is `async`. */
function validatorsIn(program: ts.Program, fileNames: string[]): Array<{ at: string; returns: string; async: boolean }> {
  const checker = program.getTypeChecker();
  const found: Array<{ at: string; returns: string; async: boolean }> = [];
  for (const file of fileNames) {
    const source = program.getSourceFile(file)!;
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAssignment(node) && node.name.getText(source) === 'validator') {
        const fn = node.initializer;
        const at = `${path.basename(file)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
        const signature = checker.getSignaturesOfType(checker.getTypeAtLocation(fn), ts.SignatureKind.Call)[0];
        const returns = signature ? checker.typeToString(checker.getReturnTypeOfSignature(signature)) : '(not a function)';
        let isAsync = ts.isFunctionLike(fn) && (ts.getCombinedModifierFlags(fn) & ts.ModifierFlags.Async) !== 0;
        // The function it delegates to (`(req) => validateX(state, req)`), if any.
        const body = ts.isArrowFunction(fn) ? fn.body : undefined;
        if (body && ts.isCallExpression(body)) {
          const callee = checker.getSymbolAtLocation(body.expression);
          const target = callee && (callee.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(callee) : callee);
          for (const d of target?.declarations ?? [])
            if (ts.isFunctionDeclaration(d) && (ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Async) !== 0) isAsync = true;
        }
        found.push({ at, returns, async: isAsync });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

test('every Update validator in src/workflows returns void and is not async', () => {
  const all = validatorsIn(ts.createProgram(files, OPTIONS), files);
  // decide, extend, rewind, and the steering Updates: a change that drops one from the scan fails here.
  expect(all.length).toBeGreaterThanOrEqual(4);
  expect(all.filter((v) => v.returns !== 'void' || v.async)).toEqual([]);
});

test('the check sees an async validator (the scan is not blind)', () => {
  const text = `import { setHandler, defineUpdate } from '@temporalio/workflow';
const u = defineUpdate<void, [number]>('u');
async function validateU(n: number): Promise<void> { if (n < 0) throw new Error('no'); }
export function register(): void { setHandler(u, () => undefined, { validator: (n: number) => validateU(n) }); }`;
  const file = path.join(DIR, '__validator_probe__.ts');
  const host = ts.createCompilerHost(OPTIONS);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang) => (name === file ? ts.createSourceFile(name, text, lang) : read(name, lang));
  host.fileExists = (
    (exists) => (name: string) =>
      name === file || exists(name)
  )(host.fileExists.bind(host));
  expect(validatorsIn(ts.createProgram([file], OPTIONS, host), [file])).toEqual([
    { at: '__validator_probe__.ts:4', returns: 'Promise<void>', async: true },
  ]);
});
