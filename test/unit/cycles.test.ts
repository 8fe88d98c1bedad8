/**
 * No import cycles in the workflow's parts and the contract, type-only
 * imports included (a type edge still ties two modules' designs together):
 * madge, with its TypeScript detective told to keep `import type`, walks
 * every module reachable from src/workflows and src/contract.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import madge from 'madge';

const ROOT = path.resolve(__dirname, '../..');

/** The cycles madge finds from `dirs`, each as the list of files on it (relative to `base`). */
async function cycles(base: string, dirs: string[]): Promise<string[][]> {
  const graph = await madge(
    dirs.map((d) => path.join(base, d)),
    {
      baseDir: base,
      fileExtensions: ['ts'],
      tsConfig: path.join(ROOT, 'tsconfig.json'),
      detectiveOptions: { ts: { skipTypeImports: false }, es6: { skipTypeImports: false } },
    },
  );
  return graph.circular();
}

test('no import cycle, type edges included, from src/workflows and src/contract', async () => {
  expect(await cycles(ROOT, ['src/workflows', 'src/contract'])).toEqual([]);
});

test('the check sees a cycle made only of type imports', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cycles-'));
  try {
    writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\nexport interface A { b: B }\n");
    writeFileSync(path.join(dir, 'b.ts'), "import type { A } from './a';\nexport interface B { a?: A }\n");
    expect(await cycles(dir, ['.'])).toEqual([['a.ts', 'b.ts']]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
