/**
 * Nothing sensitive where no codec reaches, and nothing in plaintext where
 * one does: a run with a distinctive task, command, path, output and answer
 * waits for approval and completes; read raw (no codec) at every step, the
 * visibility record (search attributes, memo), the user metadata the UI
 * shows (static summary and details, current details), the raw query
 * answer and the whole history (through the SDK and `temporal workflow
 * show`) hold none of those strings; the search attributes carry states,
 * counts and kinds only (`approval of bash`). Read through the codec, the
 * same history gives the task, the command and the output back.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import { AGENT_AWAITING, AGENT_STATUS } from '../../src/config';
import { fromSearchText } from '../../src/shared/search-text';
import { ensureTemporalCli } from '../../src/dev/devserver';
import { decodedHistory } from '../../src/dev/testing/history-codec';
import { cli } from './cli-process';
import { TestBed, waitFor } from './harness';
import { asks, end } from './steering-helpers';

const run = promisify(execFile);
const TASK = 'TASKMARK_4e1b: tidy the ledger';
const COMMAND = "printf '%s\\n' OUTMARK_3c9d > PATHMARK_a81f.txt && cat PATHMARK_a81f.txt # CMDMARK_e02b";
const ANSWER = 'ANSWERMARK_70d2: the ledger is tidy';
const MARKS = ['TASKMARK_4e1b', 'OUTMARK_3c9d', 'PATHMARK_a81f', 'CMDMARK_e02b', 'ANSWERMARK_70d2', 'tidy the ledger'];

/** The marks found in `bytes` (a raw protobuf message or JSON text), each at most once. */
const found = (bytes: Uint8Array | string): string[] => MARKS.filter((m) => Buffer.from(bytes).includes(m));

let bed: TestBed | undefined;
afterAll(async () => bed?.close());

// C25: search attributes never hold command text.
test('visibility, user metadata and history hold no task, command, path or output in plaintext; through the codec they read', async () => {
  const b = await TestBed.create({ script: { responses: [asks(['toolu_v', COMMAND]), end(ANSWER)] } });
  bed = b;
  const handle = await b.start({ task: TASK, approval: 'always' }, 'visibility-kinds-only');
  const service = b.connection.workflowService;
  const execution = { workflowId: handle.workflowId };

  /** Every raw record of the run the server answers with, none of them through a codec. */
  const rawRecords = async (): Promise<Record<string, Uint8Array>> => {
    const described = await service.describeWorkflowExecution({ namespace: 'default', execution });
    const listed = await service.listWorkflowExecutions({ namespace: 'default', query: `WorkflowId = '${handle.workflowId}'` });
    const history = await service.getWorkflowExecutionHistory({ namespace: 'default', execution });
    return {
      describe: temporal.api.workflowservice.v1.DescribeWorkflowExecutionResponse.encode(described).finish(),
      list: temporal.api.workflowservice.v1.ListWorkflowExecutionsResponse.encode(listed).finish(),
      history: temporal.api.history.v1.History.encode(history.history ?? {}).finish(),
    };
  };

  // Waiting for approval: the visibility store says what kind of wait, never the command.
  const pending = await b.pendingApproval(handle);
  expect(pending.command).toBe(COMMAND);
  const waiting = await waitFor('the wait indexed', async () => {
    const d = await handle.describe();
    return d.searchAttributes[AGENT_STATUS.name]?.[0] === 'awaiting_approval' ? d : null;
  });
  expect(fromSearchText(String(waiting.typedSearchAttributes.get(AGENT_AWAITING)))).toBe('approval of bash');
  const raw = await service.describeWorkflowExecution({ namespace: 'default', execution });
  // Memo is written by no part of the product (and would be encrypted if it were).
  expect(Object.keys(raw.workflowExecutionInfo?.memo?.fields ?? {})).toEqual([]);
  // The current details (the UI's `__temporal_workflow_metadata` query), raw: the worker encrypted its answer.
  const metadata = await service.queryWorkflow({ namespace: 'default', execution, query: { queryType: '__temporal_workflow_metadata' } });
  const answer = metadata.queryResult?.payloads?.[0];
  expect(Buffer.from(answer?.metadata?.['encoding'] ?? []).toString()).toBe('binary/encrypted');
  expect(found(temporal.api.workflowservice.v1.QueryWorkflowResponse.encode(metadata).finish())).toEqual([]);
  for (const [what, bytes] of Object.entries(await rawRecords())) expect({ what, found: found(bytes) }).toEqual({ what, found: [] });

  expect((await cli(b.address, 'approve', handle.workflowId, '--by', 'tester')).code).toBe(0);
  expect(await handle.result()).toMatchObject({ status: 'completed', text: ANSWER });
  expect(b.audit().map((a) => a.command)).toEqual([COMMAND]);

  // Completed: every raw record, and `temporal workflow show` without a codec.
  for (const [what, bytes] of Object.entries(await rawRecords())) expect({ what, found: found(bytes) }).toEqual({ what, found: [] });
  const shown = await run(
    await ensureTemporalCli(),
    ['workflow', 'show', '--workflow-id', handle.workflowId, '--address', b.address, '--output', 'json'],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  // Plaintext JSON payloads would show as text; every payload's data decoded from base64 holds none either.
  expect(found(shown.stdout)).toEqual([]);
  expect(
    found(Buffer.from(shown.stdout.replace(/"data":\s*"([^"]*)"/g, (_m, b64: string) => Buffer.from(b64, 'base64').toString('latin1')))),
  ).toEqual([]);
  // The search attributes after the end: status and counts, the wait cleared to its kind.
  const after = await handle.describe();
  expect(JSON.stringify(after.searchAttributes)).not.toMatch(/MARK_/);

  // Through the codec it reads normally: the task, the command and its output are all there.
  const history = await decodedHistory(await handle.fetchHistory());
  const decoded = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
  expect(found(decoded).sort()).toEqual([...MARKS].sort());
  const transcript = await cli(b.address, 'transcript', handle.workflowId);
  expect(transcript.code).toBe(0);
  for (const m of ['TASKMARK_4e1b', 'CMDMARK_e02b', 'OUTMARK_3c9d']) expect(transcript.stdout).toContain(m);
}, 180_000);
