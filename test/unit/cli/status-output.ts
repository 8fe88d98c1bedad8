/**
 * What `agent-jobs status wf-1` prints for a run `view`: the real command, with its client mocked to answer that view
 * (for tests of what a person reads; no server).
 */
export async function statusLinesOf(view: object): Promise<string[]> {
  const out: string[] = [];
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  try {
    jest.resetModules();
    jest.doMock('../../../src/cli/context', () => ({
      withClient: (fn: (jobs: unknown) => Promise<unknown>) =>
        fn({ run: () => ({ status: () => Promise.resolve(view) }), uiUrl: () => 'http://ui/x' }),
    }));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { registerStatus } = require('../../../src/cli/commands/status') as typeof import('../../../src/cli/commands/status');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Command } = require('commander') as typeof import('commander');
    const program = new Command();
    registerStatus(program);
    await program.parseAsync(['node', 'agent-jobs', 'status', 'wf-1']);
  } finally {
    write.mockRestore();
    jest.dontMock('../../../src/cli/context');
  }
  return out.join('').split('\n');
}
