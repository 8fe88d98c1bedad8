/**
 * The CLI reaches Temporal only through src/client.ts (docs/client.md): no
 * file under src/cli/ loads @temporalio/client or @temporalio/proto, or an
 * SDK internal (`@temporalio/<pkg>/lib/...`), however it is written
 * (import, import type, export … from, require(), import()). The one
 * exception is a command that starts the worker or the dev server, which
 * load their own modules (src/worker.ts, src/dev/devserver.ts) and not these.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { moduleImports } from '../workflows/module-imports';

const SRC = path.resolve(__dirname, '../../../src');
const BAD_SHAPE = path.resolve(__dirname, '../../fixtures/bad-shape/src');

/** What the CLI may not load: Temporal's client and protos, and any SDK internal. */
const FORBIDDEN = /^@temporalio\/(client|proto)(\/|$)|^@temporalio\/[^/]+\/lib(\/|$)/;

/** `file -> specifier` for every forbidden module a file under `root`/cli loads (type-only imports included). */
function temporalImports(root: string): string[] {
  const dir = path.join(root, 'cli');
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.[cm]?ts$/.test(f) && !/\.d\.[cm]?ts$/.test(f))
    .sort()
    .flatMap((f) => {
      const file = path.join(dir, f);
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
      return moduleImports(source)
        .filter(({ spec }) => spec === null || FORBIDDEN.test(spec))
        .map(({ spec }) => `cli/${f} -> ${spec ?? '(computed)'}`);
    });
}

test('no file under src/cli/ imports @temporalio/client (or the protos, or SDK internals): the CLI goes through src/client.ts', () => {
  expect(temporalImports(SRC)).toEqual([]);
});

test('the check sees a type import and a require() of @temporalio/client', () => {
  expect(temporalImports(BAD_SHAPE)).toEqual(['cli/bad.ts -> @temporalio/client', 'cli/bad.ts -> @temporalio/client']);
});
