/**
 * examples/from-code.ts, the "use it from code" example of docs/client.md,
 * runs as written against a real dev server, a worker and the scripted
 * model server: it connects through envconfig (TEMPORAL_ADDRESS), starts a
 * run, approves each command it waits on and gets the result.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { TestBed, toolUse } from './harness';

const EXAMPLE = path.resolve(__dirname, '../../examples/from-code.ts');

describe('examples/from-code.ts', () => {
  let bed: TestBed;
  afterAll(async () => bed?.close());

  test('is short (at most 25 lines) and runs: start, approve each pending command, completed', async () => {
    expect(readFileSync(EXAMPLE, 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(25);
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_hello', 'echo hello > hello.txt')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_cat', 'cat hello.txt')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'hello.txt says hello.' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const before = process.env.TEMPORAL_ADDRESS;
    process.env.TEMPORAL_ADDRESS = bed.address;
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      const { main } = (await import(EXAMPLE)) as { main: () => Promise<string> };
      expect(await main()).toBe('completed');
      expect(log.mock.calls.map((c) => String(c[0]))).toEqual([
        'approved: echo hello > hello.txt',
        'approved: cat hello.txt',
        expect.stringMatching(/^run-\d{8}-\d{6}-[0-9a-f]{4}: completed: hello.txt says hello\.$/),
      ]);
    } finally {
      log.mockRestore();
      if (before === undefined) delete process.env.TEMPORAL_ADDRESS;
      else process.env.TEMPORAL_ADDRESS = before;
    }
    // Each command ran once, in the run's session.
    expect(bed.audit().map((a) => a.command)).toEqual(['echo hello > hello.txt', 'cat hello.txt']);
  });
});
