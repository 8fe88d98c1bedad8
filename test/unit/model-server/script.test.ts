import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import ts from 'typescript';
import {
  loadScript,
  ModelScriptError,
  parseScript,
  readRequestLog,
  runModelServerCommand,
  startModelServer,
} from '../../../src/dev/model-server';
import { choose, compileScript, planSteps } from '../../../src/dev/model-server/script';

const FIXTURES = join(__dirname, '../../fixtures/scripts');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'model-script-test-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function writeScript(name: string, content: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function scriptError(fn: () => unknown): ModelScriptError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ModelScriptError);
    return err as ModelScriptError;
  }
  throw new Error('expected a ModelScriptError');
}

describe('script files', () => {
  test.each(readdirSync(FIXTURES).filter((f) => f.endsWith('.json')))('example script %s is valid', (name) => {
    expect(loadScript(join(FIXTURES, name)).responses.length).toBeGreaterThan(0);
  });

  test('a bad script names the file and the path of each problem', () => {
    const file = writeScript('bad.json', {
      responses: [
        { content: [{ type: 'text' }], stop_reason: 'end_turn' },
        { error: { status: '529', times: 0 } },
        { content: [{ type: 'tool_use', name: 'bash', input: 'ls' }], delay: 5 },
      ],
    });
    const err = scriptError(() => loadScript(file));
    expect(err.source).toBe(file);
    expect(err.message).toContain(`Invalid model-server script ${file}: `);
    expect(err.issues.map((i) => i.path)).toEqual([
      'responses[0].content[0].text',
      'responses[1].error.status',
      'responses[1].error.times',
      'responses[2].content[0].input',
      'responses[2]',
    ]);
    expect(err.message).toContain('responses[2]: Unrecognized key: "delay"');
  });

  test('an http error needs a status; faults take no status', () => {
    const err = scriptError(() =>
      parseScript({ responses: [{ error: { times: 2 } }, { error: { kind: 'hang', status: 529 } }, { error: { kind: 'explode' } }] }),
    );
    expect(err.issues).toEqual([
      { path: 'responses[0].error.status', message: 'an http error needs a "status" (e.g. 529)' },
      { path: 'responses[1].error.status', message: '"status" has no meaning for kind "hang"' },
      expect.objectContaining({ path: 'responses[2].error.kind' }),
    ]);
    expect(err.message).toContain('<inline script>');
  });

  test('stream faults need after_events; only stream_error takes a body; after_events is for stream faults only', () => {
    const err = scriptError(() =>
      parseScript({
        responses: [
          { error: { kind: 'stream_cut' } },
          { error: { kind: 'stream_cut', after_events: 3, body: { type: 'error' } } },
          { error: { kind: 'stream_error', after_events: 3, status: 529 } },
          { error: { kind: 'hang', after_events: 3 } },
          { error: { kind: 'stream_cut', after_events: -1 } },
        ],
      }),
    );
    expect(err.issues).toEqual([
      { path: 'responses[0].error.after_events', message: 'kind "stream_cut" needs "after_events" (SSE events sent first)' },
      { path: 'responses[1].error.body', message: '"body" has no meaning for kind "stream_cut"' },
      { path: 'responses[2].error.status', message: '"status" has no meaning for kind "stream_error"' },
      { path: 'responses[3].error.after_events', message: '"after_events" has no meaning for kind "hang"' },
      expect.objectContaining({ path: 'responses[4].error.after_events' }),
    ]);
    const ok = parseScript({
      responses: [
        {
          error: {
            kind: 'stream_error',
            after_events: 5,
            body: { type: 'error', error: { type: 'overloaded_error', message: 'x' } },
            times: 2,
          },
        },
        { content: [{ type: 'text', text: 'ok' }] },
      ],
    });
    expect(ok.responses[0]).toEqual({
      error: {
        kind: 'stream_error',
        after_events: 5,
        body: { type: 'error', error: { type: 'overloaded_error', message: 'x' } },
        times: 2,
      },
    });
  });

  test('not JSON, a missing file, and a missing "responses" are reported with the file name', () => {
    const notJson = writeScript('broken.json', '{"responses": [');
    expect(() => loadScript(notJson)).toThrow(new RegExp(`Model-server script ${notJson} is not valid JSON`));
    const missing = join(dir, 'nope.json');
    expect(() => loadScript(missing)).toThrow(new RegExp(`Cannot read model-server script ${missing}: ENOENT`));
    const empty = writeScript('empty.json', {});
    expect(() => loadScript(empty)).toThrow(/empty\.json: responses: Invalid input: expected array/);
  });

  test('startModelServer rejects a bad script file before listening', async () => {
    const file = writeScript('bad-start.json', { responses: [{ error: { status: 200 } }] });
    await expect(startModelServer({ script: file })).rejects.toThrow(/bad-start\.json: responses\[0\]\.error\.status/);
  });

  test('defaults are applied: kind http, times 1', () => {
    expect(parseScript({ responses: [{ error: { status: 529 } }] })).toEqual({
      responses: [{ error: { kind: 'http', status: 529, times: 1 } }],
    });
  });
});

describe('step plan', () => {
  const script = compileScript({
    responses: [
      { error: { status: 529, times: 2 } },
      { error: { kind: 'connection_reset' } },
      { content: [{ type: 'text', text: 'step 0' }] },
      { content: [{ type: 'text', text: 'step 1' }] },
      { error: { status: 429 } },
      { content: [{ type: 'text', text: 'step 2' }] },
      { error: { status: 500 } },
    ],
  });
  const steps = planSteps(script);

  test('errors before a message entry belong to its step; trailing errors form a step without a message', () => {
    expect(steps.map((s) => [s.step, s.errors.length, s.message?.content[0]?.['text']])).toEqual([
      [0, 2, 'step 0'],
      [1, 0, 'step 1'],
      [2, 1, 'step 2'],
      [3, 1, undefined],
    ]);
  });

  test('each error is served `times` times in order, then the message', () => {
    const step0 = steps[0]!;
    const served = [1, 2, 3, 4, 5].map((attempt) => {
      const c = choose(step0, attempt);
      if (!c) return 'none';
      return 'error' in c ? `${c.error.kind}:${c.error.status ?? '-'}` : 'message';
    });
    expect(served).toEqual(['http:529', 'http:529', 'connection_reset:-', 'message', 'message']);
    expect(choose(steps[3]!, 1)).toMatchObject({ error: { status: 500 } });
    expect(choose(steps[3]!, 2)).toBeUndefined();
  });
});

describe('runModelServerCommand', () => {
  test('prints one line with the URL and stops when aborted', async () => {
    const out = new PassThrough();
    let printed = '';
    out.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const log = join(dir, 'cmd.jsonl');
    const abort = new AbortController();
    const running = runModelServerCommand({ script: join(FIXTURES, 'two-tool-uses.json'), log, out, signal: abort.signal });

    const url = await waitForUrl(() => printed);
    expect(printed.split('\n').filter(Boolean)).toHaveLength(1);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    abort.abort();
    await running;
    await expect(fetch(`${url}/health`)).rejects.toThrow();
    expect(readRequestLog(log)).toHaveLength(1);
  });

  test('as a process: stops cleanly on SIGTERM and on SIGINT', async () => {
    const built = buildModelServer();
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const child = spawn(process.execPath, [join(built, 'main.js'), join(FIXTURES, 'two-tool-uses.json')], {
        env: { ...process.env, NODE_PATH: join(__dirname, '../../../node_modules') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

      const url = await waitForUrl(() => stdout + stderr);
      expect((await fetch(`${url}/health`)).status).toBe(200);
      child.kill(signal);
      expect(await exited).toBe(0);
      expect(stdout).toContain('stopped');
    }
  });
});

async function waitForUrl(text: () => string, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = /http:\/\/127\.0\.0\.1:\d+/.exec(text());
    if (match) return match[0];
    if (Date.now() > deadline) throw new Error(`no URL printed; output so far: ${text()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Transpiles src/dev/model-server to CommonJS in a temp folder, with a tiny entry point, to run it as a process. */
function buildModelServer(): string {
  const src = join(__dirname, '../../../src/dev/model-server');
  const out = join(dir, 'built');
  mkdirSync(out, { recursive: true });
  for (const name of readdirSync(src).filter((f) => f.endsWith('.ts'))) {
    const js = ts.transpileModule(readFileSync(join(src, name), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    }).outputText;
    writeFileSync(join(out, name.replace(/\.ts$/, '.js')), js);
  }
  writeFileSync(
    join(out, 'main.js'),
    `require('./command').runModelServerCommand({ script: process.argv[2] }).then(
       () => console.log('stopped'),
       (err) => { console.error(err.message); process.exitCode = 1; });\n`,
  );
  return out;
}
