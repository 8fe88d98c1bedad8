/**
 * The text form of `transcript` and `watch`: long command outputs are cut
 * with a note that names the command that shows them whole, and
 * `transcript --full` shows them whole.
 */
import { transcriptText } from '../../../src/cli/commands/transcript';
import { indent, SHOWN_OUTPUT_LINES } from '../../../src/cli/render/text';
import type { Message } from '../../../src/contract';

const output = Array.from({ length: 85 }, (_, i) => `line ${i + 1}`).join('\n');
const messages: Message[] = [
  { role: 'user', content: 'count to 85' },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'seq 85' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: output }] },
];

describe('cut command outputs', () => {
  test('indent keeps 20 lines and points at transcript --full for the rest', () => {
    const lines = indent(output).split('\n');
    expect(lines).toHaveLength(SHOWN_OUTPUT_LINES + 1);
    expect(lines[SHOWN_OUTPUT_LINES - 1]).toBe('    line 20');
    expect(lines[SHOWN_OUTPUT_LINES]).toBe('    … 65 more lines (agent-jobs transcript <workflowId> --full shows all)');
  });

  test('indent with maxLines Infinity keeps every line; the next call cuts again', () => {
    expect(indent(output, '    ', Infinity).split('\n')).toHaveLength(85);
    expect(indent(output).split('\n')).toHaveLength(SHOWN_OUTPUT_LINES + 1);
  });

  test('transcript text: cut by default, whole with --full', () => {
    const cut = transcriptText(messages, false);
    expect(cut).toContain('claude asks to run: seq 85    [toolu_1]');
    expect(cut).toContain('    line 20\n    … 65 more lines (agent-jobs transcript <workflowId> --full shows all)\n');
    expect(cut).not.toContain('line 21');
    const full = transcriptText(messages, true);
    expect(full).toContain('    line 84\n    line 85\n');
    expect(full).not.toContain('more lines');
  });

  test("the hint names the run's id when known, escaped once on one line", () => {
    expect(transcriptText(messages, false, {}, 'fix-tests')).toContain(
      '    … 65 more lines (agent-jobs transcript fix-tests --full shows all)\n',
    );
    // An id is the user's text: a control character in it reaches the terminal escaped.
    expect(transcriptText(messages, false, {}, 'a\u001b[2Jb')).toContain('(agent-jobs transcript a\\x1b[2Jb --full shows all)');
  });
});
