/** `agent-jobs models`: the model table the CLI starts runs with (built-in rows, `AGENT_JOBS_MODELS` merged over them). */
import { cliCommand } from '../invocation';
import Table from 'cli-table3';
import type { Command } from 'commander';
import { DEFAULT_MODEL } from '../../config';
import { capabilitiesOf, contextStrategyOf, type ModelInfo } from '../../contract/models';
import { modelTable } from '../../settings';
import { CliError } from '../errors';
import { printJson, printLines } from '../render/text';

/** One row of `models --json`: the entry with every capability resolved. */
export interface ModelRow extends ModelInfo {
  model: string;
  default: boolean;
  /** How a run on this model keeps within its window (src/contract/models.ts, `ContextStrategy`). */
  contextStrategy: string;
}

/**
 * The rows `models` prints: every model of the table, the default first, then by id.
 * @throws CliError when `AGENT_JOBS_MODELS` cannot be read or is not a valid table
 */
export function modelRows(env: NodeJS.ProcessEnv = process.env): ModelRow[] {
  let table: Record<string, ModelInfo>;
  try {
    table = modelTable(env);
  } catch (err) {
    throw new CliError(err instanceof Error ? err.message : String(err), 'fix AGENT_JOBS_MODELS (docs/configuration.md), or unset it');
  }
  const ids = Object.keys(table).sort((a, b) => (a === DEFAULT_MODEL ? -1 : b === DEFAULT_MODEL ? 1 : a.localeCompare(b)));
  return ids.map((model) => {
    const info = table[model]!;
    const caps = capabilitiesOf({ model, modelInfo: info });
    return { model, default: model === DEFAULT_MODEL, ...info, ...caps, contextStrategy: contextStrategyOf(caps) };
  });
}

const tokens = (n: number): string => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${Math.round(n / 1_000)}K`);
const usd = (n: number): string => `$${Number(n.toFixed(3))}`;

export function registerModels(program: Command): void {
  program
    .command('models')
    .description(
      'list the models runs can use: window, max output, prices per MTok, how each thinks and keeps within its window (AGENT_JOBS_MODELS overrides)',
    )
    .option(
      '--json',
      'print one object per model: contextWindow, maxOutputTokens, prices, thinking, thinkingBudget, preservedThinking, compaction, contextStrategy, source',
    )
    .action((opts: { json?: boolean }) => {
      const rows = modelRows();
      if (opts.json) return printJson(rows);
      const table = new Table({
        head: ['model', 'window', 'output', 'input', 'output', 'write 5m', 'write 1h', 'read', 'thinking', 'context'],
        style: { head: [], border: [] },
      });
      for (const r of rows) {
        const p = r.prices;
        table.push([
          `${r.model}${r.default ? ' (default)' : ''}`,
          tokens(r.contextWindow),
          tokens(r.maxOutputTokens ?? 0),
          ...(p ? [usd(p.input), usd(p.output), usd(p.cacheWrite5m), usd(p.cacheWrite1h), usd(p.cacheRead)] : ['?', '?', '?', '?', '?']),
          `${r.thinking}${r.thinkingBudget && r.thinking !== 'budget' ? ' +budget' : ''}${r.preservedThinking ? ', bound' : ''}`,
          r.contextStrategy,
        ]);
      }
      printLines(
        table.toString(),
        'Prices in USD per million tokens. thinking: adaptive-only (--effort only), adaptive (--effort; +budget: --thinking N too), budget (--thinking N);',
        `"bound": thinking blocks are bound to the prefix, so nothing already sent is ever edited. Sources: ${cliCommand()} models --json.`,
      );
    });
}
