/**
 * Attacks on steering, on the real dev server with real workers and the
 * scripted model: the model trying to get more through an approval rule
 * than the person approved, and a hostile client sending malformed or
 * ill-timed Updates and names or messages full of escape sequences. Each
 * test says what was tried; those that pass because the protection held
 * document it.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import {
  MAX_MESSAGE_CHARS,
  decideUpdate,
  endUpdate,
  pauseUpdate,
  removeRuleUpdate,
  resumeUpdate,
  sayUpdate,
  type DecideRequest,
} from '../../src/contract';
import { isShedUpdate } from '../../src/client';
import { sha256 } from '../../src/shared/sha256';
import { cli } from './cli-process';
import { TestBed, waitFor } from './harness';
import { asks, decide, end, rejected } from './steering-helpers';

/**
 * Waits for every promise to settle, up to `timeoutMs`.
 * @throws Error naming `what` and how many were still open at the deadline
 */
async function settledWithin<T>(what: string, promises: Array<Promise<T>>, timeoutMs: number): Promise<Array<PromiseSettledResult<T>>> {
  let open = promises.length;
  const all = Promise.allSettled(promises.map((p) => p.finally(() => open--)));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${open} still open)`)), timeoutMs);
  });
  try {
    return await Promise.race([all, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** ESC, CSI, BEL, OSC: what a terminal acts on. */
const RAW_ESCAPES = /[\x1b\x07\x9b\x9d]/;

describe('steering attacks', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('a prefix rule runs only plain commands that start with its words; everything else the model tries asks', async () => {
    const tries: Array<[string, string]> = [
      ['toolu_2', 'touch b.txt; touch pwned1'],
      ['toolu_3', 'touch $(touch pwned2)'],
      ['toolu_4', 'touch c.txt\ntouch pwned3'],
      ['toolu_5', 'touch c.txt > pwned4'],
      ['toolu_6', 'touch LD_PRELOAD=./x.so'],
      ['toolu_7', 'touch c.txt\rtouch pwned5'],
      ['toolu_8', 'touch\u00a0pwned6'],
      ['toolu_9', 'touchx pwned7'],
      ['toolu_10', "to'u'ch 'ok 1.txt'"],
      ['toolu_11', `touch ${'a'.repeat(4100)}`],
    ];
    bed = await TestBed.create({ script: { responses: [asks(['toolu_1', 'touch a.txt']), asks(...tries), end('done')] } });
    const handle = await bed.start({ task: 'rules', approval: 'always', approvalTimeout: '1s' }, 'attack-prefix-rule');
    await bed.pendingApproval(handle);
    await decide(handle, { toolUseId: 'toolu_1', alwaysPrefix: 'touch' }, 'touch a.txt');
    expect((await handle.result()).status).toBe('completed');
    // Only the command the person approved and the one plain, quoted `touch` ran.
    expect(bed.audit().map((a) => a.command)).toEqual(['touch a.txt', "to'u'ch 'ok 1.txt'"]);
    const s = await bed.status(handle);
    expect(s.decisions.filter((d) => d.source === 'rule').map((d) => d.toolUseId)).toEqual(['toolu_10']);
    expect(s.decisions.filter((d) => d.source === 'timeout').map((d) => d.toolUseId)).toEqual(
      tries.map(([id]) => id).filter((id) => id !== 'toolu_10'),
    );
  }, 90_000);

  test('no rule for a shell builtin that changes the session shell; printf -v asks under a printf rule', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          asks(['toolu_cd', 'cd sub']),
          asks(['toolu_p1', 'printf %s one']),
          asks(['toolu_p2', 'printf -v PATH %s /nonexistent'], ['toolu_p3', 'printf %s two'], ['toolu_p4', "'printf' -vPATH %s x"]),
          end('done'),
        ],
      },
    });
    const handle = await bed.start({ task: 'builtins', approval: 'always', approvalTimeout: '2s' }, 'attack-builtin-rules');
    await bed.pendingApproval(handle);
    for (const req of [{ always: true }, { alwaysPrefix: 'cd' }, { alwaysPrefix: 'cd sub' }]) {
      expect(await rejected(decide(handle, { toolUseId: 'toolu_cd', ...req }, 'cd sub'))).toMatch(
        /shell builtin cd would change the session shell/,
      );
    }
    await decide(handle, { toolUseId: 'toolu_cd' }, 'cd sub').catch(() => undefined); // cd fails (no such dir): fine
    await waitFor('toolu_p1 pending', async () => (await bed.status(handle)).pendingApproval?.toolUseId === 'toolu_p1');
    expect(await rejected(decide(handle, { toolUseId: 'toolu_p1', alwaysPrefix: 'printf -v' }, 'printf %s one'))).toMatch(
      /shell builtin printf -v would change/,
    );
    await decide(handle, { toolUseId: 'toolu_p1', alwaysPrefix: 'printf' }, 'printf %s one');
    expect((await handle.result()).status).toBe('completed');
    expect(bed.audit().map((a) => a.command)).toEqual(['cd sub', 'printf %s one', 'printf %s two']);
    const s = await bed.status(handle);
    expect(s.decisions.filter((d) => d.source === 'timeout').map((d) => d.toolUseId)).toEqual(['toolu_p2', 'toolu_p4']);
    expect(s.rules?.map((r) => [r.kind, r.text])).toEqual([['prefix', 'printf']]);
  }, 90_000);

  test('a rule longer than any command a rule can match is refused', async () => {
    const long = `touch ${'a'.repeat(5000)}`;
    bed = await TestBed.create({ script: { responses: [asks(['toolu_l', long]), end('done')] } });
    const handle = await bed.start({ task: 'long', approval: 'always' }, 'attack-long-rule');
    await bed.pendingApproval(handle);
    expect(await rejected(decide(handle, { toolUseId: 'toolu_l', always: true }, long))).toMatch(/longer than 4096 characters/);
    expect(await rejected(decide(handle, { toolUseId: 'toolu_l', alwaysPrefix: `touch${' '.repeat(5000)}` }, long))).toMatch(
      /longer than 4096 characters/,
    );
    expect((await bed.status(handle)).rules).toEqual([]);
    await decide(handle, { toolUseId: 'toolu_l', alwaysPrefix: 'touch' }, long);
    expect((await handle.result()).status).toBe('completed');
  }, 60_000);

  // C23: validators reject without changing the run.
  test('malformed Updates are rejected before the history; prototype keys and extra fields change nothing', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_m', 'touch m.txt']), end('done')] } });
    const handle = await bed.start({ task: 'malformed', approval: 'always' }, 'attack-malformed');
    const waiting = await bed.pendingApproval(handle);
    const h = sha256('touch m.txt');
    const send = (update: unknown, payload: unknown): Promise<unknown> =>
      handle.executeUpdate(update as typeof decideUpdate, { args: [payload as DecideRequest] });
    const cases: Array<[string, unknown, unknown, RegExp]> = [
      ['decide: null', decideUpdate, null, /must be a JSON object/],
      ['decide: a string', decideUpdate, 'approve', /must be a JSON object/],
      ['decide: toolUseId a number', decideUpdate, { toolUseId: 7, approved: true, by: 'a', commandSha256: h }, /toolUseId must be/],
      ['decide: by an object', decideUpdate, { toolUseId: 'toolu_m', approved: true, by: {}, commandSha256: h }, /by must name/],
      ['decide: by only spaces', decideUpdate, { toolUseId: 'toolu_m', approved: true, by: ' \t', commandSha256: h }, /by must name/],
      ['decide: approved 1', decideUpdate, { toolUseId: 'toolu_m', approved: 1, by: 'a', commandSha256: h }, /approved must be/],
      [
        'decide: always "true"',
        decideUpdate,
        { toolUseId: 'toolu_m', approved: true, by: 'a', commandSha256: h, always: 'true' },
        /always must be/,
      ],
      [
        'decide: reason null',
        decideUpdate,
        { toolUseId: 'toolu_m', approved: true, by: 'a', commandSha256: h, reason: null },
        /reason must be/,
      ],
      [
        'decide: edit an array',
        decideUpdate,
        { toolUseId: 'toolu_m', approved: true, by: 'a', commandSha256: h, edit: ['id'] },
        /edit must be/,
      ],
      [
        'decide: a huge reason',
        decideUpdate,
        { toolUseId: 'toolu_m', approved: false, by: 'a', commandSha256: h, reason: 'x'.repeat(100_001) },
        /reason must be a string of at most/,
      ],
      [
        'decide: hash with spaces',
        decideUpdate,
        { toolUseId: 'toolu_m', approved: true, by: 'a', commandSha256: ` ${h}` },
        /commandSha256 must be/,
      ],
      ['say: text a number', sayUpdate, { text: 5, by: 'a' }, /text must be/],
      ['say: too long', sayUpdate, { text: 'x'.repeat(MAX_MESSAGE_CHARS + 1), by: 'a' }, /longer than/],
      ['pause: no by', pauseUpdate, {}, /by must name/],
      ['resume: not paused', resumeUpdate, { by: 'a' }, /not paused/],
      ['end: not a chat', endUpdate, { by: 'a' }, /not a conversation/],
      ['removeRule: id a string', removeRuleUpdate, { id: '1', by: 'a' }, /id must be/],
      ['removeRule: id a float', removeRuleUpdate, { id: 1.5, by: 'a' }, /id must be/],
      ['removeRule: id null (NaN on the wire)', removeRuleUpdate, { id: Number.NaN, by: 'a' }, /id must be/],
      ['removeRule: id negative', removeRuleUpdate, { id: -1, by: 'a' }, /no rule -1/],
      ['removeRule: id huge', removeRuleUpdate, { id: 2 ** 53, by: 'a' }, /no rule/],
      ['removeRule: id Infinity', removeRuleUpdate, { id: Number.POSITIVE_INFINITY, by: 'a' }, /id must be/],
    ];
    for (const [what, update, payload, reason] of cases) {
      const message = await rejected(send(update, payload));
      expect({ what, message }).toEqual({ what, message: expect.stringMatching(reason) });
    }
    // `__proto__` arrives as an own key (JSON.parse): it sets no field of the request.
    const proto = JSON.parse(
      `{"toolUseId":"toolu_m","approved":false,"by":"a","commandSha256":"${h}","__proto__":{"approved":true,"always":true}}`,
    );
    const extra = { ...proto, constructor: { prototype: { always: true } }, toString: 'x', hasOwnProperty: 1 };
    // The run and wait an encrypted run requires (sealed-decisions.test.ts).
    const answer = await send(decideUpdate, { ...extra, reason: 'prototype keys', runId: waiting.runId, wait: waiting.wait });
    expect(answer).toEqual({
      applied: true,
      toolUseId: 'toolu_m',
      wait: expect.any(Number),
      decision: 'denied',
      by: 'a',
      command: 'touch m.txt',
    });
    expect((await handle.result()).status).toBe('completed');
    const s = await bed.status(handle);
    expect(s.rules).toEqual([]);
    expect(bed.audit()).toEqual([]);
    const accepted = ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    expect(accepted).toHaveLength(1);
  }, 90_000);

  test('decide for an earlier turn, and say, pause, resume and end after the end', async () => {
    bed = await TestBed.create({
      script: { responses: [asks(['toolu_a', 'touch a.txt']), asks(['toolu_b', 'touch b.txt']), end('done')] },
    });
    const handle = await bed.start({ task: 'late', approval: 'always' }, 'attack-late');
    await bed.pendingApproval(handle);
    await decide(handle, { toolUseId: 'toolu_a' }, 'touch a.txt');
    await waitFor('toolu_b pending', async () => (await bed.status(handle)).pendingApproval?.toolUseId === 'toolu_b');
    // The earlier tool_use, with its own (right) hash: not pending any more.
    expect(await rejected(decide(handle, { toolUseId: 'toolu_a' }, 'touch a.txt'))).toMatch(
      /^(?!.*toolu_b).*the tool_use named is not pending/,
    );
    // The pending id with the earlier command's hash: refused.
    expect(await rejected(decide(handle, { toolUseId: 'toolu_b' }, 'touch a.txt'))).toMatch(/not the hash of the pending command/);
    await decide(handle, { toolUseId: 'toolu_b' }, 'touch b.txt');
    expect((await handle.result()).status).toBe('completed');
    expect(bed.audit().map((a) => a.command)).toEqual(['touch a.txt', 'touch b.txt']);
    for (const u of [sayUpdate, pauseUpdate, resumeUpdate, endUpdate] as const) {
      await expect(handle.executeUpdate(u as typeof pauseUpdate, { args: [{ text: 'late', by: 'z' } as never] })).rejects.toThrow(
        /already completed/,
      );
    }
  }, 90_000);

  // Its own run (the checks above took most of one test's time on a machine loaded by three suites at once).
  // Its time: 8 s alone; on a worker niced under four CPU hogs the storm alone took 35-64 s (the server
  // aborts and resends the Updates of a run whose worker is slow: docs/decisions.md, "Updates the server
  // sheds are sent again") and the whole test 78-110 s, hence the integration default of 180 s.
  test('a pause/resume storm while a command waits for approval: one state at the end, and the run still works', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_s', 'touch s.txt']), end('done')] } });
    const handle = await bed.start({ task: 'storm', approval: 'always' }, 'attack-storm');
    await bed.pendingApproval(handle);
    // Pause and resume, many at once and in a row, from a raw Temporal client (no agent-jobs resends):
    // the run ends up in one state and still works.
    const storm = await settledWithin(
      'the 20 storm Updates answered or refused (the SDK gives up on what the server sheds within about 40 s)',
      Array.from({ length: 20 }, (_, i) => handle.executeUpdate(i % 2 === 0 ? pauseUpdate : resumeUpdate, { args: [{ by: `p${i}` }] })),
      90_000,
    );
    expect(storm.some((r) => r.status === 'fulfilled')).toBe(true);
    for (const r of storm) {
      if (r.status === 'fulfilled') continue;
      // Refused by the run's validator, or shed by the server before the run saw it (more than 10 in flight, or
      // aborted while the worker was slow): either way nothing was applied.
      if (isShedUpdate(r.reason)) continue;
      expect((r.reason as WorkflowUpdateFailedError).cause?.message).toMatch(/already paused|not paused/);
    }
    for (let i = 0; i < 5; i++) {
      await handle.executeUpdate(pauseUpdate, { args: [{ by: 'loop' }] }).catch(() => undefined);
      await handle.executeUpdate(resumeUpdate, { args: [{ by: 'loop' }] });
    }
    const s = await bed.status(handle);
    expect(s.pause).toBeNull();
    expect(s.status).toBe('awaiting_approval');
    await decide(handle, { toolUseId: 'toolu_s' }, 'touch s.txt');
    expect((await handle.result()).status).toBe('completed');
    expect(bed.audit().map((a) => a.command)).toEqual(['touch s.txt']);
  });

  test('decisions racing the approval timeout: an accepted decision is the one applied', async () => {
    const ids = ['toolu_r1', 'toolu_r2', 'toolu_r3', 'toolu_r4', 'toolu_r5', 'toolu_r6'];
    bed = await TestBed.create({ script: { responses: [...ids.map((id) => asks([id, `touch ${id}.txt`])), end('done')] } });
    const handle = await bed.start({ task: 'race', approval: 'always', approvalTimeout: '1s' }, 'attack-timeout-race');
    const answers = new Map<string, { decision: string } | string>();
    for (const [i, id] of ids.entries()) {
      const p = await waitFor(`${id} pending`, async () => {
        const s = await bed.status(handle);
        return s.pendingApproval?.toolUseId === id ? s.pendingApproval : null;
      });
      const waited = Date.now() - Date.parse(p.requestedAt);
      await new Promise((r) => setTimeout(r, Math.max(0, 850 + i * 40 - waited)));
      try {
        answers.set(id, (await decide(handle, { toolUseId: id }, `touch ${id}.txt`)) as never);
      } catch (err) {
        answers.set(id, (err as WorkflowUpdateFailedError).cause?.message ?? String(err));
      }
    }
    expect((await handle.result()).status).toBe('completed');
    const decisions = (await bed.status(handle)).decisions;
    const ran = bed.audit().map((a) => a.command);
    for (const id of ids) {
      const a = answers.get(id);
      const d = decisions.find((x) => x.toolUseId === id);
      if (typeof a === 'string') {
        // Rejected: the timeout came first, and the command did not run.
        expect({ id, a }).toEqual({ id, a: expect.stringMatching(/not pending|no command is waiting/) });
        expect(d).toMatchObject({ source: 'timeout', approved: false });
        expect(ran).not.toContain(`touch ${id}.txt`);
      } else {
        expect({ id, decision: a?.decision }).toEqual({ id, decision: d?.decision });
        expect(ran.includes(`touch ${id}.txt`)).toBe(d?.approved === true);
      }
    }
  }, 90_000);

  test('a flood of long messages cannot make the run too big to query or to decide on', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_q', 'touch q.txt']), end('done')] } });
    const handle = await bed.start({ task: 'flood', approval: 'always' }, 'attack-say-flood');
    await bed.pendingApproval(handle);
    const text = 'y'.repeat(MAX_MESSAGE_CHARS);
    const results: string[] = [];
    for (let i = 0; i < 100; i++) {
      try {
        await handle.executeUpdate(sayUpdate, { args: [{ text, by: `f${i}` }] });
        results.push('queued');
      } catch (err) {
        if (!(err instanceof WorkflowUpdateFailedError)) throw err;
        results.push(err.cause?.message ?? err.message);
      }
    }
    // The status query still answers, and a person can still decide from the CLI.
    const s = await bed.status(handle);
    expect(s.pendingApproval?.toolUseId).toBe('toolu_q');
    const ok = await cli(bed.address, 'approve', handle.workflowId, '--json');
    expect({ code: ok.code, stderr: ok.stderr }).toEqual({ code: 0, stderr: '' });
    expect((await handle.result()).status).toBe('completed');
    expect(results.slice(0, 2)).toEqual(['queued', 'queued']);
    expect(new Set(results.slice(2))).toEqual(new Set([expect.stringMatching(/characters are already queued; .* more than 200000/)]));
  }, 180_000);

  test('escape sequences in by and in messages never reach the terminal raw (status, rules, pending, watch, transcript)', async () => {
    const evil = 'mal\x1b]0;pwned\x07lory\x1b[2J\x9b31m\r\u202e';
    bed = await TestBed.create({ script: { responses: [asks(['toolu_e', 'touch e.txt']), asks(['toolu_f', 'touch f.txt']), end('ok')] } });
    const a = bed.address;
    const handle = await bed.start({ task: 'escapes', approval: 'always' }, 'attack-escapes');
    await bed.pendingApproval(handle);
    // A by holding escapes, markup or bidi characters is refused by every Update (the name is shown in status, pending, watch and the UI).
    for (const by of [evil, 'a`b`', '**bold**', 'x\u202ey', 'tab\there', 'new\nline', '<script>'])
      expect(await rejected(handle.executeUpdate(sayUpdate, { args: [{ text: 'hi', by }] }))).toMatch(/by may hold only/);
    expect(await rejected(handle.executeUpdate(pauseUpdate, { args: [{ by: evil }] }))).toMatch(/by may hold only/);
    expect(await rejected(decide(handle, { toolUseId: 'toolu_e', by: evil }, 'touch e.txt'))).toMatch(/by may hold only/);
    const name = "Ana María O'Brien-2";
    await handle.executeUpdate(sayUpdate, {
      args: [{ text: `hi \x1b[31mred\x1b[0m\x1b]8;;http://x\x07link\x1b]8;;\x07\u202e`, by: name }],
    });
    await decide(handle, { toolUseId: 'toolu_e', by: name, always: true }, 'touch e.txt');
    await waitFor('toolu_f pending', async () => (await bed.status(handle)).pendingApproval?.toolUseId === 'toolu_f');
    await handle.executeUpdate(pauseUpdate, { args: [{ by: name }] });
    await waitFor('paused', async () => (await bed.status(handle)).status === 'paused');
    const outputs = [
      await cli(a, 'status', handle.workflowId),
      await cli(a, 'status', handle.workflowId, '--json'),
      await cli(a, 'rules', handle.workflowId),
      await cli(a, 'rules', handle.workflowId, '--json'),
      await waitFor('pending indexed', async () => {
        const r = await cli(a, 'pending');
        return r.stdout.includes(handle.workflowId) && r.stdout.includes('paused') ? r : null;
      }),
      await cli(a, 'pending', '--json'),
      // Another client's pause is quoted in the rejection.
      await cli(a, 'pause', handle.workflowId),
    ];
    expect(outputs.at(-1)?.stderr).toMatch(/already paused/);
    await handle.executeUpdate(resumeUpdate, { args: [{ by: name }] });
    await decide(handle, { toolUseId: 'toolu_f', by: name }, 'touch f.txt');
    expect((await handle.result()).status).toBe('completed');
    outputs.push(await cli(a, 'watch', handle.workflowId), await cli(a, 'transcript', handle.workflowId));
    for (const [i, o] of outputs.entries()) {
      expect({ i, raw: RAW_ESCAPES.test(o.stdout) || RAW_ESCAPES.test(o.stderr) }).toEqual({ i, raw: false });
      expect({ i, bidi: /\u202e/.test(o.stdout + o.stderr) }).toEqual({ i, bidi: false });
    }
    expect(outputs[0]!.stdout).toContain(name);
    expect((JSON.parse(outputs[3]!.stdout) as Array<{ by: string }>)[0]!.by).toBe(name);
  }, 120_000);
});
