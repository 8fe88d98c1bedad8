import { DEFAULT_SYSTEM_PROMPT, resolveInput } from '../../../src/contract/input';

describe('agentRun input', () => {
  test('defaults: policy approvals, a 24 hour approval wait, 50 turns, 2 minute commands', () => {
    const r = resolveInput({ task: 'do it' });
    expect(r).toEqual({
      ok: true,
      input: {
        task: 'do it',
        model: 'claude-sonnet-5-5',
        maxTurns: 50,
        maxTokens: 4096,
        system: DEFAULT_SYSTEM_PROMPT,
        approval: 'policy',
        workdir: undefined,
        network: false,
        commandTimeoutMs: 120_000,
        approvalTimeout: '24 hours',
        approvalTimeoutAction: 'deny',
        chat: false,
        chatIdleTimeout: '24 hours',
        transcriptBudgetChars: 200_000,
      },
    });
  });

  test.each([
    [{}, 'task: Invalid input: expected string, received undefined'],
    [{ task: '   ' }, 'task: task must not be empty'],
    [{ task: 'x', maxTurns: 0 }, 'maxTurns: Too small'],
    [{ task: 'x', approval: 'sometimes' }, 'approval: Invalid option'],
    [{ task: 'x', approvalTimeout: 'soon' }, 'approvalTimeout: must be a duration'],
    [{ task: 'x', approvalTimeoutAction: 'ignore' }, 'approvalTimeoutAction: Invalid option'],
    [{ task: 'x', chat: 'yes' }, 'chat: Invalid input'],
    [{ task: 'x', chatIdleTimeout: 'later' }, 'chatIdleTimeout: must be a duration'],
    [{ task: 'x', maxTurn: 3 }, 'Unrecognized key: "maxTurn"'],
  ])('%j is rejected with a message naming the field', (raw, message) => {
    const r = resolveInput(raw);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(message);
  });

  test.each(['24 hours', '30s', '1.5h', '90 minutes', 5000])('approvalTimeout %j is a Temporal duration', (approvalTimeout) => {
    expect(resolveInput({ task: 'x', approvalTimeout }).ok).toBe(true);
  });
});
