/**
 * The CLI's help shows defaults, limits and value lists from the code: the
 * option descriptions interpolate the constants (src/config.ts, the
 * contract's lists) instead of restating them, so they cannot drift.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import ts from 'typescript';
import {
  DEFAULT_APPROVAL_TIMEOUT,
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_MAX_TOKENS,
  DEFAULT_MAX_TURNS,
  DEFAULT_MODEL,
} from '../../../src/config';
import { APPROVAL_MODES, CLI_DEFAULT_ON_BUDGET, DEFAULT_APPROVAL_MODE, ON_BUDGET_ACTIONS, RUN_STATUSES } from '../../../src/contract';
import { MIN_THINKING_TOKENS } from '../../../src/contract/input';
import { SHORT_HASH_CHARS } from '../../../src/shared/display';
import { DEV_SERVER_PORT } from '../../../src/dev/devserver';
import { SHOWN_OUTPUT_LINES } from '../../../src/cli/render/text';
import { formatDurationMs } from '../../../src/cli/parse';
import { buildProgram } from '../../../src/cli/program';

const COMMANDS_DIR = path.resolve(__dirname, '../../../src/cli/commands');

function help(name: string): string {
  const command = buildProgram().commands.find((c: Command) => c.name() === name);
  if (!command) throw new Error(`no command ${name}`);
  // One line per option, so a description is not split where the terminal width would wrap it.
  return command.configureHelp({ helpWidth: 10_000 }).helpInformation();
}
const optionLine = (text: string, flag: string): string => text.split('\n').find((l) => l.trimStart().startsWith(flag)) ?? '';

describe('CLI help shows the values of the code', () => {
  test('start: model, approval modes and their default, turns, tokens, timeouts', () => {
    const h = help('start');
    expect(optionLine(h, '--model')).toContain(`else ${DEFAULT_MODEL}`);
    const approval = optionLine(h, '--approval <mode>');
    for (const mode of APPROVAL_MODES) expect(approval).toMatch(new RegExp(`\\b${mode} \\(`));
    expect(approval).toContain(`default: "${DEFAULT_APPROVAL_MODE}"`);
    expect(optionLine(h, '--max-turns')).toContain(`default ${DEFAULT_MAX_TURNS}`);
    expect(optionLine(h, '--max-tokens')).toContain(`default ${DEFAULT_MAX_TOKENS}`);
    expect(optionLine(h, '--command-timeout')).toContain(`default ${formatDurationMs(DEFAULT_COMMAND_TIMEOUT_MS)}`);
    expect(optionLine(h, '--approval-timeout')).toContain(`default ${DEFAULT_APPROVAL_TIMEOUT}`);
    const onBudget = optionLine(h, '--on-budget');
    for (const action of ON_BUDGET_ACTIONS) expect(onBudget).toContain(`"${action}"`);
    expect(onBudget).toContain(`default: "${CLI_DEFAULT_ON_BUDGET}"`);
    expect(optionLine(h, '--thinking')).toContain(`at least ${MIN_THINKING_TOKENS}`);
  });

  test('list, transcript, approve, server', () => {
    expect(optionLine(help('list'), '--status')).toContain(RUN_STATUSES.join(', '));
    expect(optionLine(help('transcript'), '--full')).toContain(`after ${SHOWN_OUTPUT_LINES} lines`);
    expect(optionLine(help('approve'), '--sha')).toContain(`show ${SHORT_HASH_CHARS} digits`);
    const server = help('server');
    expect(optionLine(server, '--port')).toContain(`else ${DEV_SERVER_PORT}`);
    expect(optionLine(server, '--ui-port')).toContain(`e.g. ${DEV_SERVER_PORT + 1000}`);
  });

  test('formatDurationMs writes the largest whole unit the parser reads back', () => {
    expect([120_000, 500, 30_000, 3_600_000, 86_400_000, 90_000, 1_500].map(formatDurationMs)).toEqual([
      '2m',
      '500ms',
      '30s',
      '1h',
      '1d',
      '90s',
      '1500ms',
    ]);
  });

  test('no option description in src/cli/commands/ restates a default or limit as a literal', () => {
    const values = [
      DEFAULT_MODEL,
      DEFAULT_APPROVAL_TIMEOUT,
      '24h',
      formatDurationMs(DEFAULT_COMMAND_TIMEOUT_MS),
      DEFAULT_MAX_TURNS,
      DEFAULT_MAX_TOKENS,
      DEV_SERVER_PORT,
      DEV_SERVER_PORT + 1000,
      SHORT_HASH_CHARS,
      SHOWN_OUTPUT_LINES,
    ].map(String);
    const words = new RegExp(`(?<![\\w.-])(${values.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})(?![\\w-])`);
    const modes = new RegExp(`\\b(${APPROVAL_MODES.join('|')})\\b.*\\b(${APPROVAL_MODES.join('|')})\\b`);
    const found: string[] = [];
    for (const file of readdirSync(COMMANDS_DIR).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(path.join(COMMANDS_DIR, file), 'utf8');
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        // The literal text of strings and templates (not what they interpolate).
        if (
          ts.isStringLiteral(node) ||
          ts.isNoSubstitutionTemplateLiteral(node) ||
          ts.isTemplateHead(node) ||
          ts.isTemplateMiddle(node) ||
          ts.isTemplateTail(node)
        ) {
          const m = words.exec(node.text) ?? modes.exec(node.text);
          if (m)
            found.push(
              `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${m[0]} in ${JSON.stringify(node.text.slice(0, 80))}`,
            );
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(found).toEqual([]);
  });
});

test("a required option says so in its command's help, and an optional one does not", () => {
  const program = buildProgram();
  const helpOf = (name: string): string => program.commands.find((c: Command) => c.name() === name)!.helpInformation();
  for (const [name, flag] of [
    ['deny', '--reason'],
    ['rewind', '--to-turn'],
    ['diff', '--turn'],
    ['fork', '--at-turn'],
    ['model-server', '--script'],
  ] as const)
    expect([name, flag, optionLine(helpOf(name), flag)]).toEqual([name, flag, expect.stringContaining('(required)')]);
  expect(optionLine(helpOf('fork'), '--workdir')).not.toContain('(required)');
  expect(optionLine(helpOf('start'), '--model')).not.toContain('(required)');
});
