/**
 * Every command a hint names is typed the way the person ran the CLI: hints go through one
 * helper (src/cli/invocation.ts `asTyped`, or `cliCommand` where the text is built). This scan
 * fails on a literal `agent-jobs <command>` in CLI code that prints without it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CLI_COMMANDS, asTyped, workerCommand } from '../../../src/cli/invocation';
import { buildProgram } from '../../../src/cli/program';

const CLI = path.resolve(__dirname, '../../../src/cli');
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
const named = new RegExp(`agent-jobs (?:${CLI_COMMANDS.join('|')})\\b`);

describe('hints name commands as the person types them', () => {
  const npx = { npm_command: 'exec' };
  const root = path.resolve(__dirname, '../../..');

  test('CLI_COMMANDS is the program’s list of commands', () => {
    expect([...CLI_COMMANDS].sort()).toEqual(
      buildProgram()
        .commands.map((c) => c.name())
        .sort(),
    );
  });

  test('a command in a run’s text or a hint, quoted or not, is rewritten; the worker as the README starts it', () => {
    expect(asTyped('waiting for the next message: agent-jobs say r1 <text>; agent-jobs end r1 to finish', npx)).toBe(
      'waiting for the next message: npx agent-jobs say r1 <text>; npx agent-jobs end r1 to finish',
    );
    expect(asTyped('list them: agent-jobs checkpoints r1', npx)).toBe('list them: npx agent-jobs checkpoints r1');
    expect(asTyped('start one with `agent-jobs worker`', npx, root)).toBe('start one with `node bin/agent-jobs.js worker`');
    expect(asTyped('so it ends when one starts (agent-jobs worker)', npx, '/')).toBe(
      `so it ends when one starts (node ${path.join(root, 'bin', 'agent-jobs.js')} worker)`,
    );
    expect(workerCommand({ PATH: process.env.PATH }, root)).toBe('agent-jobs worker');
    expect(workerCommand({ PATH: '' }, root)).toBe('node bin/agent-jobs.js worker');
    // Already typed, prose, a task queue, a path: left alone.
    for (const text of [
      'npx agent-jobs status r1',
      'the agent-jobs task queue',
      'agent-jobs: failed',
      'bin/agent-jobs status',
      'agent-jobs-worker start',
    ])
      expect(asTyped(text, npx)).toBe(text);
  });

  test('no CLI source prints a literal `agent-jobs <command>` past the helper', () => {
    const offenders: string[] = [];
    for (const file of files(CLI)) {
      const rel = path.relative(CLI, file);
      // errors.ts: its hints are printed by reportError (and watch) through asTyped.
      if (rel === 'errors.ts' || rel === 'invocation.ts') continue;
      const lines = readFileSync(file, 'utf8').split('\n');
      lines.forEach((line, i) => {
        const code = line.trim();
        if (!named.test(code) || /^(\*|\/\/|\/\*\*)/.test(code)) return;
        // Help text (commander prints it), text built through the helper, or a CliError's (reportError types it):
        // on the line or in the call it continues (the three lines before it).
        const call = lines.slice(Math.max(0, i - 3), i + 1).join('\n');
        if (/\.(option|requiredOption|description|command)\(|new Option\(|asTyped\(|cliCommand\(|CliError\(/.test(call)) return;
        offenders.push(`${rel}:${i + 1}: ${code}`);
      });
    }
    expect(offenders).toEqual([]);
  });
});
