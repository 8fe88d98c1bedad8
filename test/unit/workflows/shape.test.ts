/**
 * The shape that keeps the workflow readable (src/workflows/README.md): no
 * function in src/workflows/ or src/session/ longer than 80 lines, no
 * module-level `let` or `var` in src/session/ (its state lives in objects:
 * src/session/README.md), the `agentRun` body on
 * one screen, and the one-way arrows of docs/architecture.md (the contract
 * imports only itself, src/shared/ and src/config.ts; src/shared/ only
 * itself and the contract's types; the workflow only itself, the contract,
 * src/shared/ and src/config.ts, and the activities as types; the CLI the
 * workflow and the activities as types only), over every import however it
 * is written (module-imports.ts), import() and require() included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { functionSizes, moduleVariables, tsFiles } from '../../../src/dev/scripts/function-sizes';
import { moduleImports } from './module-imports';

const SRC = path.resolve(__dirname, '../../../src');
const MAX_FUNCTION_LINES = 80;
/** The session library's bound: the same 80 lines as the workflow's. */
const MAX_SESSION_FUNCTION_LINES = 80;
/** A screen: the loop and its handlers, no more. */
const MAX_AGENT_RUN_LINES = 30;

/** TypeScript files under `dir`, of every module kind (.cts and .mts compile into dist/ like .ts). */
function moduleFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.[cm]?ts$/.test(f) && !/\.d\.[cm]?ts$/.test(f))
    .map((f) => path.join(dir, f))
    .sort();
}

/** `[specifier, typeOnly]` of every module a file loads, however written (module-imports.ts); '' for a computed one. */
function importsOf(file: string): Array<[string, boolean]> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  return moduleImports(source).map(({ spec, typeOnly }) => [spec ?? '', typeOnly]);
}

interface LocalImport {
  file: string;
  target: string;
  typeOnly: boolean;
}

/** Local imports of the files under `root`/`dir`, with the importing file and the imported path relative to `root` (src/, or a fixture's). */
function localImports(dir: string, root = SRC): LocalImport[] {
  return moduleFiles(path.join(root, dir)).flatMap((file) =>
    importsOf(file)
      // A computed specifier could be anything: it counts as going everywhere.
      .filter(([spec]) => spec === '' || spec.startsWith('.'))
      .map(([spec, typeOnly]) => ({
        file: path.relative(root, file),
        target: spec === '' ? '(computed)' : path.relative(root, path.resolve(path.dirname(file), spec)),
        typeOnly,
      })),
  );
}

// The arrows of docs/architecture.md, each as the imports that go against it. The contract and the workflow name what
// they may import (a module of src/ added later is not theirs until it is on the list); the CLI names what it may not.
const within = (target: string, parts: string[]): boolean => parts.some((p) => new RegExp(`^${p}(\\.js)?(/|$)`).test(target));
/** The contract imports only itself and src/config.ts (and packages), types included. */
const contractArrowsWrong = (root = SRC): LocalImport[] =>
  localImports('contract', root).filter(({ target }) => !within(target, ['contract', 'shared', 'config']));
/** The deterministic helpers (src/shared/) import only themselves and the contract's types. */
const sharedArrowsWrong = (root = SRC): LocalImport[] =>
  localImports('shared', root).filter(({ target, typeOnly }) => !within(target, ['shared']) && !(typeOnly && within(target, ['contract'])));
/** The workflow imports itself, the contract, src/shared/ and src/config.ts; the activities as types only (for proxyActivities). */
const workflowArrowsWrong = (root = SRC): LocalImport[] =>
  localImports('workflows', root).filter(
    ({ target, typeOnly }) =>
      !within(target, ['workflows', 'contract', 'shared', 'config']) && !(typeOnly && within(target, ['activities'])),
  );
/** The CLI reaches the workflow and the activities as types only (the client's `import type` of the workflow function). */
const cliArrowsWrong = (root = SRC): LocalImport[] =>
  localImports('cli', root).filter(
    ({ target, typeOnly }) => !typeOnly && (target === '(computed)' || within(target, ['workflows', 'activities'])),
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

  test('the contract imports nothing but itself, src/shared/ and src/config.ts: not the CLI, the workflow, the activities, the session or the settings', () => {
    expect(contractArrowsWrong()).toEqual([]);
  });

  test("src/shared/ imports nothing but itself and the contract's types", () => {
    expect(sharedArrowsWrong()).toEqual([]);
    expect(localImports('shared').length).toBeGreaterThan(0);
  });

  test('the workflow imports the activities only as types (for proxyActivities), and nothing else of src/ but the contract and src/config.ts', () => {
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

describe('the session library as named parts', () => {
  test(`no function in src/session/ is longer than ${MAX_SESSION_FUNCTION_LINES} lines`, () => {
    const sizes = tsFiles(path.join(SRC, 'session')).flatMap(functionSizes);
    const long = sizes.filter((f) => f.lines > MAX_SESSION_FUNCTION_LINES).map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`);
    expect(long).toEqual([]);
    // The check sees the session's steps (a method of the class, a function of a module).
    expect(sizes.map((f) => f.name)).toEqual(expect.arrayContaining(['BashSession.runNow', 'ShellProcess.start', 'bwrapArgs']));
  });

  test('no module-level let or var in src/session/: state lives in objects (the watchdog, SessionHost)', () => {
    const found = tsFiles(path.join(SRC, 'session'))
      .flatMap((file) => moduleVariables(file))
      .map((v) => `${v.file}:${v.line} ${v.kind} ${v.name}`);
    expect(found).toEqual([]);
  });

  test('the module-variable check sees let and var at the top level, exported or destructured, and nothing else', () => {
    const text = [
      'let a = 1;',
      'export var b: number | undefined;',
      'let { c, d } = { c: 1, d: 2 };',
      'const e = 1;',
      'function f() { let g = 1; return g; }',
      'class H { i = 0; }',
      'const j = String.raw`let k;`;',
      '{ let l = 1; }',
    ].join('\n');
    expect(moduleVariables('fixture.ts', text).map((v) => `${v.line} ${v.kind} ${v.name}`)).toEqual([
      '1 let a',
      '2 var b',
      '3 let { c, d }',
    ]);
  });
});
