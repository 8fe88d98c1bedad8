// Lints source text as if it were the file at each given path, with the
// project's eslint.config.mjs, and prints the results as JSON. Used by
// lint.test.ts, which cannot load ESLint itself: ESLint imports its ESM config
// file, which Jest's CommonJS runtime cannot do.
//
// stdin: [{ "filePath": "src/workflows/x.ts", "code": "..." }, ...] (paths relative to the repository)
// stdout: [{ "filePath": ..., "messages": [{ "line", "column", "ruleId", "severity", "message" }] }, ...]
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';

const root = path.resolve(import.meta.dirname, '../../..');
let stdin = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) stdin += chunk;
const inputs = JSON.parse(stdin);

// A path that is not on disk is in no tsconfig program: let the project
// service type-check it in a default project with tsconfig.json's options.
// A path that exists (src/config.ts) is linted in its real project, with
// the given text in place of the file's.
const virtual = inputs.map((i) => i.filePath).filter((p) => !existsSync(path.join(root, p)));
const eslint = new ESLint({
  cwd: root,
  overrideConfig: {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: virtual,
          defaultProject: 'tsconfig.json',
          // Every virtual file is one the caller asked for: no glob can match more than it meant.
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: Math.max(8, virtual.length),
        },
      },
    },
  },
});

const results = [];
for (const { filePath, code } of inputs) {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, filePath) });
  results.push({
    filePath,
    messages: result.messages.map(({ line, column, ruleId, severity, message }) => ({ line, column, ruleId, severity, message })),
  });
}
process.stdout.write(JSON.stringify(results));
