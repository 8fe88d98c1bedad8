/**
 * A closed run's published notes (src/history.ts `withMoveNotes`): the note that the session then
 * moved to another worker is added only when the workflow wrote it, after the notes the answer
 * gives; a copy of it printed by the command is never taken for one.
 */
import { withMoveNotes } from '../../../src/history';
import { movedAfterNote } from '../../../src/workflows/tool-results';

const result = (content: string): { role: 'user'; content: [{ type: 'tool_result'; tool_use_id: string; content: string }] } => ({
  role: 'user',
  content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content }],
});
const MOVED = movedAfterNote('its worker was shut down (SIGTERM)', { cwd: '/w/x' });

describe('the move note of a closed run', () => {
  test("added after the answer's notes when the text goes on with it", () => {
    const notes = ['[agent-jobs: the working directory /w/x/d no longer exists; the shell moved to /w/x]', '[exit code: 1]'];
    const text = `out\n${notes.join('\n')}\n${MOVED}`;
    expect(withMoveNotes([result(text)], { toolu_1: notes })).toEqual({ toolu_1: [...notes, MOVED] });
  });

  test('with no note before it: taken for the note only when the answer said its worker was shutting down', () => {
    expect(withMoveNotes([result(`out\n${MOVED}`)], { toolu_1: [] }, new Set(['toolu_1']))).toEqual({ toolu_1: [MOVED] });
    // A command that exits 0 with no note, printing the line last: its own output.
    expect(withMoveNotes([result(`out\n${MOVED}`)], { toolu_1: [] })).toEqual({ toolu_1: [] });
  });

  test('a copy printed by the command before the real notes is not a note', () => {
    const notes = ['[exit code: 1]'];
    const text = `[exit code: 1]\n${MOVED}\nmore output\n[exit code: 1]`;
    expect(withMoveNotes([result(text)], { toolu_1: notes })).toEqual({ toolu_1: notes });
  });

  test('only the results of the messages, and nothing for an id without published notes', () => {
    expect(withMoveNotes([result(`out\n${MOVED}`)], {})).toEqual({});
    expect(withMoveNotes([], { toolu_1: ['[exit code: 1]'] })).toEqual({});
  });
});
