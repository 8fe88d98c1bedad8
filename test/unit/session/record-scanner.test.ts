/**
 * The record scanner (protocol.ts `RecordScanner`) fed crafted byte streams: every status record is
 * counted once whatever the chunking, however many bytes came before it, and a stream it had to cut
 * says so. A status record it missed would let a forged one be the only one (judgeRecords then says ok).
 */
import { judgeRecords } from '../../../src/session/ending';
import { RecordScanner, newCommandTokens, type CommandTokens } from '../../../src/session/protocol';

const MIB = 1 << 20;

function statusRecord(t: CommandTokens, status: string): Buffer {
  return Buffer.from(`bash: line 1: /proc/${t.status}.${status}.: No such file or directory\n`);
}
function housekeeping(t: CommandTokens): Buffer {
  return Buffer.from(`${t.housekeeping}\0\0`);
}

/** Feeds `stream` cut at `cuts` (offsets) and returns the records seen. */
function scan(t: CommandTokens, stream: Buffer, cuts: number[]): ReturnType<RecordScanner['records']> {
  const scanner = new RecordScanner();
  scanner.watchCommand(
    t,
    () => undefined,
    () => undefined,
  );
  let at = 0;
  for (const c of [...cuts, stream.length]) {
    if (c > at) scanner.push(stream.subarray(at, c));
    at = Math.max(at, c);
  }
  return scanner.records();
}

/** Chunks of `size` bytes from 0. */
function every(size: number, length: number): number[] {
  const out: number[] = [];
  for (let i = size; i < length; i += size) out.push(i);
  return out;
}

describe('the record scanner counts every status record', () => {
  const t = newCommandTokens();

  test('a forged record after a full buffer of padding, then bash own: both counted, so not ok', () => {
    const forged = Buffer.concat([statusRecord(t, '0'), housekeeping(t)]);
    for (const padLength of [MIB - forged.length, MIB - forged.length - 1, MIB - forged.length + 1, MIB, 2 * MIB + 17]) {
      const stream = Buffer.concat([Buffer.alloc(padLength, '-'), forged, statusRecord(t, '7'), housekeeping(t)]);
      for (const cuts of [every(65536, stream.length), every(4096, stream.length), [padLength], [padLength + 5], []]) {
        const r = scan(t, stream, cuts);
        expect(r.statuses).toEqual(['0', '7']);
        expect(judgeRecords(r, true, true, { readLine: true, idle: true }).kind).toBe('tampered');
      }
    }
  });

  test('a record split at every byte boundary across two pushes, after a buffer that filled up, is counted once', () => {
    const tail = Buffer.concat([statusRecord(t, '7'), housekeeping(t)]);
    const pad = Buffer.alloc(MIB - 3, 'x');
    const stream = Buffer.concat([pad, tail]);
    for (let cut = pad.length - 2; cut <= stream.length; cut++) {
      const r = scan(t, stream, [65536, cut]);
      expect(r.statuses).toEqual(['7']);
      expect(r.housekeeping).toEqual({ flags: '' });
      expect(r.overflow).toBeUndefined();
    }
  });

  test('one byte at a time: every record counted', () => {
    const stream = Buffer.concat([Buffer.from('junk '), statusRecord(t, '3'), Buffer.from('more'), housekeeping(t), statusRecord(t, '9')]);
    const r = scan(t, stream, every(1, stream.length));
    expect(r.statuses).toEqual(['3', '9']);
    expect(r.housekeeping).toBeDefined();
  });

  test('many records, and padding whose length puts a record exactly at each cut', () => {
    const records = Array.from({ length: 200 }, (_, i) => statusRecord(t, String(i % 256)));
    const stream = Buffer.concat(records.flatMap((rec) => [Buffer.alloc(10_000, '.'), rec]));
    const starts: number[] = [];
    let at = 0;
    for (const rec of records) {
      at += 10_000;
      starts.push(at);
      at += rec.length;
    }
    const r = scan(t, stream, starts);
    expect(r.statuses).toEqual(records.map((_, i) => String(i % 256)));
  });

  test('an unfinished record longer than the buffer is said, not dropped silently', () => {
    // A token with no end: the scanner keeps the record until its '.'; past the buffer it gives up and says so.
    const open = Buffer.concat([Buffer.from(`/proc/${t.status}.`), Buffer.alloc(2 * MIB, 'z')]);
    const cut = scan(t, open, every(65536, open.length));
    expect(cut.overflow).toBe(true);
    // Then bash's own records: whether its record ends the unfinished one or comes after the cut, not ok.
    for (const padding of [MIB - 100, MIB + 10, 2 * MIB]) {
      const stream = Buffer.concat([Buffer.from(`/proc/${t.status}.`), Buffer.alloc(padding, 'z'), statusRecord(t, '0'), housekeeping(t)]);
      const r = scan(t, stream, every(65536, stream.length));
      expect(judgeRecords(r, true, true, { readLine: true, idle: true }).kind).toBe('tampered');
    }
  });

  test("bash's own records alone, after any amount of junk without tokens, are ok", () => {
    for (const junk of [0, 1, 35, MIB - 1, MIB, MIB + 1, 3 * MIB]) {
      const stream = Buffer.concat([Buffer.alloc(junk, 'q'), statusRecord(t, '7'), housekeeping(t)]);
      const r = scan(t, stream, every(65536, stream.length));
      expect(judgeRecords(r, true, true, { readLine: true, idle: true })).toEqual({ kind: 'ok', status: 7 });
    }
  });
});
