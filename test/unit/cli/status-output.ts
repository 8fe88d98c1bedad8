/**
 * What a command of `agent-jobs` prints, run through the real program (src/cli/program.ts) with its client mocked
 * (for tests of what a person reads; no server).
 */

/** What `agent-jobs <args...>` writes to stdout, line by line, with `withClient` handing the command `jobs`. */
export async function cliLinesOf(args: string[], jobs: object): Promise<string[]> {
  const out: string[] = [];
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  try {
    jest.resetModules();
    jest.doMock('../../../src/cli/context', () => ({
      withClient: (fn: (j: unknown) => Promise<unknown>) => fn(jobs),
    }));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { buildProgram } = require('../../../src/cli/program') as typeof import('../../../src/cli/program');
    await buildProgram().parseAsync(['node', 'agent-jobs', ...args]);
  } finally {
    write.mockRestore();
    jest.dontMock('../../../src/cli/context');
  }
  return out.join('').split('\n');
}

/** What `agent-jobs status wf-1` prints for a run `view` (its client answers that view). */
export async function statusLinesOf(view: object): Promise<string[]> {
  return cliLinesOf(['status', 'wf-1'], {
    run: () => ({ status: () => Promise.resolve(view) }),
    uiUrl: () => 'http://ui/x',
    servedUiUrl: () => Promise.resolve('http://ui/x'),
  });
}
