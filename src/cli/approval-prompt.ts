/**
 * The inline approval prompt of `watch` on a terminal:
 * `[a]pprove  [d]eny  [e]dit  (enter: keep watching)`, one key press, then
 * for a denial the reason and for an edit the new command, each one line
 * read with node:readline. Only used when stdin and stdout are both TTYs.
 */
import { createInterface } from 'node:readline/promises';

/** The prompt line (what `watch` shows while a command waits, and what the terminal test looks for). */
export const PROMPT_TEXT = '[a]pprove  [d]eny  [e]dit  (enter: keep watching) ';

/** What the person chose at the prompt. `dismiss`: keep watching without deciding (enter, Ctrl-D). */
export type InlineDecision =
  { kind: 'approve' } | { kind: 'deny'; reason: string } | { kind: 'edit'; command: string } | { kind: 'dismiss' };

/** The terminal the prompt talks to: stdin and stdout, both TTYs. */
export interface PromptTerminal {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
}

/** Ctrl-C in raw mode arrives as this byte instead of SIGINT. */
const CTRL_C = '\u0003';
/** Ctrl-D. */
const CTRL_D = '\u0004';

/** Ends the process as Ctrl-C would outside raw mode (the terminal's mode is restored first). */
function interrupt(term: PromptTerminal): void {
  term.output.write('\n');
  process.kill(process.pid, 'SIGINT');
}

/** One key press in raw mode (the first character of what arrives); null when `signal` aborts first. */
function readKey(term: PromptTerminal, signal: AbortSignal): Promise<string | null> {
  return new Promise((resolve) => {
    const { input } = term;
    const done = (key: string | null): void => {
      input.off('data', onData);
      signal.removeEventListener('abort', onAbort);
      input.setRawMode(false);
      input.pause();
      resolve(key);
    };
    const onData = (chunk: Buffer | string): void => done(String(chunk).charAt(0));
    const onAbort = (): void => done(null);
    if (signal.aborted) return resolve(null);
    input.setRawMode(true);
    input.resume();
    input.on('data', onData);
    signal.addEventListener('abort', onAbort);
  });
}

/** One line read with readline after `question`, trimmed; null when `signal` aborts first or the input ends. */
async function readLine(term: PromptTerminal, question: string, signal: AbortSignal): Promise<string | null> {
  const rl = createInterface({ input: term.input, output: term.output, terminal: true });
  rl.on('SIGINT', () => {
    rl.close();
    interrupt(term);
  });
  try {
    return (await rl.question(question, { signal }).then(null, () => null))?.trim() ?? null;
  } finally {
    rl.close();
    term.input.pause();
  }
}

/**
 * Asks what to do with the pending command: writes {@link PROMPT_TEXT}
 * and reads one key (`a`, `d`, `e`; enter or Ctrl-D to keep watching;
 * other keys are ignored). `d` then asks for the reason (sent to Claude),
 * `e` for the command to run instead; an empty answer goes back to the keys.
 * Ctrl-C ends the process as it would anywhere else.
 * @param signal aborts the prompt (the approval was decided elsewhere, or timed out): resolves null
 * @returns the choice, or null when aborted; the cursor is at the start of a new line either way
 */
export async function askDecision(term: PromptTerminal, signal: AbortSignal): Promise<InlineDecision | null> {
  for (;;) {
    term.output.write(PROMPT_TEXT);
    const key = await readKey(term, signal);
    if (key === null) {
      term.output.write('\n');
      return null;
    }
    if (key === CTRL_C) {
      interrupt(term);
      return null;
    }
    const shown = key === '\r' || key === '\n' || key === CTRL_D ? '' : key.replace(/[^a-z]/gi, '');
    term.output.write(`${shown}\n`);
    if (key === '\r' || key === '\n' || key === CTRL_D) return { kind: 'dismiss' };
    if (key === 'a' || key === 'A') return { kind: 'approve' };
    if (key === 'd' || key === 'D') {
      const reason = await readLine(term, 'reason (sent to Claude): ', signal);
      if (reason === null) return null;
      if (reason) return { kind: 'deny', reason };
    } else if (key === 'e' || key === 'E') {
      const command = await readLine(term, 'command to run instead: ', signal);
      if (command === null) return null;
      if (command) return { kind: 'edit', command };
    }
  }
}
