/**
 * Where code lives (docs/architecture.md, "Layout"): src/ is the product,
 * src/dev/ the development tooling (dev server launcher, cluster recipe,
 * scripted model server, benchmarks, test support, scripts, the demo). No
 * product file loads anything of src/dev/, however it is written (import,
 * import type, export … from, import-equals, require(), require.resolve(),
 * import()), except the CLI commands that launch a development tool, each
 * for its own tool. Within src/dev/, src/dev/bench/ holds benchmarks only
 * (each one a script package.json runs); what tests and benchmarks share to
 * drive real processes lives in src/dev/testing/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { moduleImports } from './workflows/module-imports';

const ROOT = path.resolve(__dirname, '../..');
const SRC = path.join(ROOT, 'src');
/** A tree whose product reaches src/dev/ in every way the check must see, beside imports it must allow. */
const BAD_LAYOUT = path.join(ROOT, 'test', 'fixtures', 'bad-layout', 'src');

/** The development tooling's folder, relative to src/. */
const DEV = 'dev';

/**
 * The CLI commands that launch a development tool, each with the part of
 * src/dev/ it may load (paths relative to src/, a folder or a module without
 * its extension). Nothing else of the product may load src/dev/.
 */
const LAUNCHERS: Readonly<Record<string, readonly string[]>> = {
  // `agent-jobs server`: a local Temporal dev server.
  'cli/commands/server.ts': ['dev/devserver'],
  // `agent-jobs model-server`: the scripted Messages API server (also the compose file's model-server service).
  'cli/commands/model-server.ts': ['dev/model-server'],
};

/** Code files under `dir`, relative to it, of every module kind, declarations left out. */
function codeFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.[cm]?[tj]s$/.test(f) && !/\.d\.[cm]?ts$/.test(f))
    .map((f) => f.split(path.sep).join('/'))
    .sort();
}

/** Every module a file names, as moduleImports sees them plus `require.resolve(…)` (which names a module without loading it); null when computed. */
function specifiers(file: string): Array<string | null> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const resolved: Array<string | null> = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      ts.isIdentifier(node.expression.expression) &&
      node.expression.expression.text === 'require' &&
      node.expression.name.text === 'resolve'
    ) {
      const arg = node.arguments[0];
      resolved.push(arg && (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg)) ? arg.text : null);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...moduleImports(source).map(({ spec }) => spec), ...resolved];
}

const within = (target: string, part: string): boolean => target === part || target.startsWith(`${part}/`);

/** `file -> target` (relative to `root`) for every load of `root`/dev/ by a file outside it that its launcher entry does not allow; a computed specifier counts, since it could be anything. */
function productReachesDev(root: string): string[] {
  return codeFiles(root)
    .filter((file) => !within(file, DEV))
    .flatMap((file) =>
      specifiers(path.join(root, file)).flatMap((spec) => {
        if (spec === null) return [`${file} -> (computed)`];
        if (!spec.startsWith('.')) return [];
        const target = path
          .relative(root, path.resolve(root, path.dirname(file), spec))
          .split(path.sep)
          .join('/')
          .replace(/\.[cm]?js$/, '');
        if (!within(target, DEV)) return [];
        return (LAUNCHERS[file] ?? []).some((allowed) => within(target, allowed)) ? [] : [`${file} -> ${target}`];
      }),
    );
}

describe('the product apart from its tools', () => {
  test('no product file loads src/dev/, but the CLI commands that launch a development tool, each its own', () => {
    expect(productReachesDev(SRC)).toEqual([]);
  });

  test('each launcher on the list still loads its tool (the list names no file that has stopped launching one)', () => {
    for (const [file, allowed] of Object.entries(LAUNCHERS)) {
      const targets = specifiers(path.join(SRC, file))
        .filter((s): s is string => s !== null && s.startsWith('.'))
        .map((s) => path.posix.join('cli/commands', s));
      expect({ file, loads: allowed.filter((a) => targets.some((t) => within(t, a))) }).toEqual({ file, loads: allowed });
    }
  });

  test('the check sees every way of loading a module, lets a launcher load only its own tool, and lets src/dev/ load anything', () => {
    expect(productReachesDev(BAD_LAYOUT)).toEqual([
      // A type import, an export … from, and a `.js` specifier, from a command that launches nothing.
      'cli/commands/list.ts -> dev/model-server',
      'cli/commands/list.ts -> dev/ports',
      // A launcher reaching past its own tool.
      'cli/commands/server.ts -> dev/testing/worker-process',
      // Import-equals, require(), import(), a computed import() and require.resolve().
      'session/bad.ts -> dev/testing/exec',
      'session/bad.ts -> dev/model-server/script',
      'session/bad.ts -> dev/bench/turns',
      'session/bad.ts -> (computed)',
      'session/bad.ts -> dev/testing/bare-workflow',
    ]);
  });
});

test('every file in src/dev/bench/ is a benchmark an npm script runs', () => {
  const scripts = Object.values(
    (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts,
  );
  const notRun = readdirSync(path.join(SRC, 'dev', 'bench'))
    .filter((f) => f.endsWith('.ts'))
    .filter((f) => !scripts.some((s) => s.includes(`dist/dev/bench/${f.replace(/\.ts$/, '.js')}`)));
  expect(notRun).toEqual([]);
});

test('the integration harness takes its worker processes from src/dev/testing/', () => {
  const harness = readFileSync(path.join(ROOT, 'test', 'integration', 'harness.ts'), 'utf8');
  expect(harness).toContain("from '../../src/dev/testing/worker-process'");
  expect(harness).not.toContain('src/dev/bench/');
});
