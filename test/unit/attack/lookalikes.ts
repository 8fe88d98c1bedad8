/** Helpers of the look-alike attacks (display-lookalikes and the adversary rounds' kind 5). */
import { execFileSync } from 'node:child_process';
import { commandLines } from '../../../src/cli/render/text';
import { commandDetails, commandSummary, displayCommand } from '../../../src/shared/display';

/** A command holding `ch`, which reads as `looksLike` but which bash takes as a letter, printing `bashSays`. */
export interface LookalikeCase {
  command: string;
  ch: string;
  looksLike: string;
  bashSays: string;
}

/** What bash prints for `command` (real bash: the characters mean nothing to it). */
export function bash(command: string): string {
  return execFileSync('bash', ['--noprofile', '--norc', '-c', command], { encoding: 'utf8', cwd: '/tmp' });
}

/**
 * Asserts that bash reads the case's `ch` as a letter (it prints `bashSays`) and that every place
 * a human reads the command flags it as a look-alike and never shows `ch` itself: the CLI's
 * lines, the UI's summary and details.
 */
export function expectFlaggedEverywhere({ command, ch, bashSays }: LookalikeCase): void {
  expect(bash(command)).toBe(bashSays);
  const d = displayCommand(command);
  expect(d.warnings.join('\n')).toContain('look-alike');
  expect(d.text).not.toContain(ch);
  expect(commandLines(command, { label: 'claude asks to run: ' }).join('\n')).not.toContain(ch);
  expect(commandSummary(command, 1)).not.toContain(ch);
  expect(commandDetails(command)).not.toContain(ch);
}

/** Whether the approval prompt (escaped, with a warning), the UI's summary and its details all show `command` other than verbatim. */
export function flaggedEverywhere(command: string): { prompt: boolean; summary: boolean; details: boolean } {
  const d = displayCommand(command);
  return {
    prompt: d.warnings.length > 0 && d.text !== command,
    summary: !commandSummary(command, 1).includes(command),
    details: !commandDetails(command).includes(command),
  };
}

/** What {@link flaggedEverywhere} gives for a command shown other than verbatim everywhere. */
export const FLAGGED = { prompt: true, summary: true, details: true };
