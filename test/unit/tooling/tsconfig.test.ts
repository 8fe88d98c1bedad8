/**
 * Every tsconfig*.json of the repository is a configuration TypeScript accepts: its options
 * pass TypeScript's own checks (TS5110: `module` and `moduleResolution` that do not go
 * together; an unknown option; a missing base config). ts-jest reads tsconfig.test.json and
 * substitutes a resolution it can use, so jest never shows such an error, and
 * `tsc -p tsconfig.test.json` did.
 *
 * The options only, not a type check of the files: a whole type check of a config costs about
 * 20 s of CPU (`tsc -p tsconfig.test.json --noEmit`, docs/development.md), this one tens of ms.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../../..');
const CONFIGS = fs.readdirSync(ROOT).filter((f) => /^tsconfig(\..+)?\.json$/.test(f));

/**
 * What TypeScript says of the options of a config (an absolute path): the errors of reading and parsing it (with what it
 * extends) and those of a program built with its options and no files.
 * @returns one line a problem, `TS<code> <message>`; empty when there are none
 */
function optionProblems(configPath: string): string[] {
  const read = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, path.dirname(configPath), undefined, configPath);
  const program = ts.createProgram({ rootNames: [], options: parsed.options });
  const diagnostics = [
    ...(read.error ? [read.error] : []),
    ...parsed.errors,
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
  ];
  return diagnostics.map((d) => `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
}

describe('tsconfig files', () => {
  test('the configs the build, the type check and jest use are all here', () => {
    expect(CONFIGS).toEqual(expect.arrayContaining(['tsconfig.json', 'tsconfig.build.json', 'tsconfig.test.json']));
  });

  test.each(CONFIGS)('%s: TypeScript accepts its options', (file) => {
    expect(optionProblems(path.join(ROOT, file))).toEqual([]);
  });

  test('a config whose module and moduleResolution do not go together is caught', () => {
    // The shape tsconfig.test.json had: CommonJS output (ts-jest's) with the base config's node16 resolution.
    // Outside the repository, so the lint file's Prettier run never sees it.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tsconfig-probe-'));
    try {
      const bad = path.join(dir, 'tsconfig.bad.json');
      const compilerOptions = { module: 'commonjs', moduleResolution: 'node16' };
      fs.writeFileSync(bad, JSON.stringify({ extends: path.join(ROOT, 'tsconfig.json'), compilerOptions }));
      expect(optionProblems(bad)).toEqual([expect.stringMatching(/^TS5110 /)]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
