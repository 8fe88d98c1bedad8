/**
 * The one line `watch` redraws in place on a terminal: a spinner with the
 * elapsed time and what the run waits on (`⠋ running command (12s)`), or
 * Claude's answer as it streams (`⠋ claude is writing… (3s) <tail>`).
 * Drawn with a carriage return and erase-line (`\r\x1b[2K`), so it is only
 * ever used when stdout is a TTY; every other line `watch` prints goes
 * through {@link LiveLine.print}, which takes the live line away first and
 * draws it again under the printed text.
 */
import { terminalText } from './render/text';

/** Frames of the spinner (braille dots), one per {@link SPINNER_FRAME_MS}. */
export const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'] as const;

/** Time between two spinner frames, in ms: 100 (ten frames a second, as most CLIs). */
export const SPINNER_FRAME_MS = 100;

/** Carriage return, then ECMA-48 "erase in line" (whole line): the cursor is at column 0 of an empty line. */
const ERASE_LINE = '\r\x1b[2K';

/** What the live line says: a label, since when (for the elapsed time), and optional text after it (Claude's partial answer). */
export interface LiveStatus {
  /** What the run waits on, e.g. `running command`, `claude is writing…`. Plain text (sanitized when drawn). */
  label: string;
  /** Start of the wait, in ms since the epoch; the line shows the seconds since. */
  sinceMs: number;
  /** Text shown after the label, cut from the left to fit the line (its end is the newest). @default '' */
  tail?: string;
}

/**
 * Terminal columns a character takes: 2 for East Asian wide and fullwidth
 * characters and most emoji, 1 otherwise (an estimate: no dependency on a
 * width table; erring wide only leaves the line a little short).
 */
function cellsOf(ch: string): number {
  const cp = ch.codePointAt(0) ?? 0;
  const wide =
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd);
  return wide ? 2 : 1;
}

/** Terminal columns of `text` (see {@link cellsOf}). */
export function cellsOfText(text: string): number {
  let n = 0;
  for (const ch of text) n += cellsOf(ch);
  return n;
}

/** The end of `text` that fits in `cells` columns, with `…` in front when cut. */
export function fitTail(text: string, cells: number): string {
  if (cells <= 0) return '';
  if (cellsOfText(text) <= cells) return text;
  const chars = Array.from(text);
  let used = 1; // the ellipsis
  let start = chars.length;
  while (start > 0 && used + cellsOf(chars[start - 1]!) <= cells) used += cellsOf(chars[--start]!);
  return `…${chars.slice(start).join('')}`;
}

/** The start of `text` that fits in `cells` columns, with `…` at the end when cut. */
export function fitHead(text: string, cells: number): string {
  if (cells <= 0) return '';
  if (cellsOfText(text) <= cells) return text;
  let out = '';
  let used = 1;
  for (const ch of text) {
    if (used + cellsOf(ch) > cells) break;
    out += ch;
    used += cellsOf(ch);
  }
  return `${out}…`;
}

/**
 * Text on one terminal line: runs of line breaks and tabs become one space,
 * then {@link terminalText} shows every escape sequence, control, bidi and
 * invisible character escaped (nothing from Claude reaches the terminal raw).
 */
export function oneLine(text: string): string {
  return terminalText(text.replace(/[\r\n\t]+/g, ' '));
}

/**
 * The text of the live line for `status` at `nowMs`, cut to `columns - 1`
 * cells (the last column is left empty so the terminal never wraps it):
 * `<frame> <label> (<seconds>s)` and, when there is one, two spaces and the
 * end of the tail.
 */
export function liveText(status: LiveStatus, frame: number, nowMs: number, columns: number): string {
  const seconds = Math.max(0, Math.floor((nowMs - status.sinceMs) / 1000));
  const head = `${SPINNER_FRAMES[frame % SPINNER_FRAMES.length]} ${oneLine(status.label)} (${seconds}s)`;
  const width = Math.max(10, columns - 1);
  const tail = status.tail ? oneLine(status.tail) : '';
  if (!tail) return fitHead(head, width);
  const room = width - cellsOfText(head) - 2;
  return room > 0 ? `${head}  ${fitTail(tail, room)}` : fitHead(head, width);
}

/**
 * The live line on a TTY stream. {@link set} changes what it says,
 * {@link print} writes lines above it, {@link stop} erases it and stops the
 * spinner's timer (which does not keep the process alive).
 */
export class LiveLine {
  /** What the line says now; null when nothing is drawn. */
  private status: LiveStatus | null = null;
  /** Spinner frame counter. */
  private frame = 0;
  /** Redraws the line every {@link SPINNER_FRAME_MS} while there is a status. */
  private timer: NodeJS.Timeout | null = null;
  /** Whether the cursor's line holds a drawn live line (to erase before anything else is written). */
  private drawn = false;

  /** @param out a TTY stream (its `columns` are read on every draw; 80 when unknown) */
  constructor(private readonly out: NodeJS.WriteStream) {}

  /** Shows `status` (or nothing, with null), redrawn with the spinner until changed. */
  set(status: LiveStatus | null): void {
    this.status = status;
    if (status && !this.timer) {
      this.timer = setInterval(() => {
        this.frame += 1;
        this.draw();
      }, SPINNER_FRAME_MS);
      this.timer.unref();
    } else if (!status && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    this.draw();
  }

  /** Writes `text` (already terminal-safe) and a line break above the live line, which is drawn again after it. */
  print(text: string): void {
    this.out.write(`${this.drawn ? ERASE_LINE : ''}${text}\n`);
    this.drawn = false;
    this.draw();
  }

  /** Erases the live line and stops the spinner; {@link set} starts it again. */
  stop(): void {
    this.set(null);
  }

  private draw(): void {
    if (!this.status) {
      if (this.drawn) this.out.write(ERASE_LINE);
      this.drawn = false;
      return;
    }
    this.out.write(`${ERASE_LINE}${liveText(this.status, this.frame, Date.now(), this.out.columns || 80)}`);
    this.drawn = true;
  }
}
