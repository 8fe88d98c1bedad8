/**
 * C30: the workflow's count of a task's payload bytes is the payload
 * converter's (UTF-8 of the JSON), so the bound it checks is the one the
 * server applies, before the codec's few bytes of overhead.
 */
import { payloadBytes, utf8Length } from '../../../src/workflows/task-payloads';

test('utf8Length is Buffer.byteLength: ASCII, 2- and 3-byte characters, surrogate pairs, lone surrogates', () => {
  for (const s of ['', 'abc', 'é', '€uro', '😀', 'a😀b', '\ud800', 'x\udc00y', '\ud83d', '"\\\n\t\u0001'])
    expect(utf8Length(s)).toBe(Buffer.byteLength(s, 'utf8'));
});

test('payloadBytes sums the JSON of each value, as the payload converter writes it; undefined writes nothing', () => {
  const values = [{ task: 'x'.repeat(1000), note: 'ünïcode 😀', list: [1, 2, 3] }, 'plain "quoted" text\n', undefined, null];
  const expected = values.reduce((n: number, v) => n + (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v), 'utf8')), 0);
  expect(payloadBytes(values)).toBe(expected);
});
