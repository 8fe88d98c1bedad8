/**
 * A run's state for people and machines: the `status --json` shape, and the
 * one-line forms of limits, budget pauses and approval rules that `status`,
 * `extend`, `rules` and `watch` print.
 */
import type { RunView } from '../../client';
import { normalizeUsage, type ApprovalRule, type BudgetLimits, type PauseState, type PendingApproval } from '../../contract';
import { carriageReturnsJudged, diffWarnings, displayCommand, safeText, shortHash, type CommandDisplay } from '../../shared/display';
import { jsonText } from './text';
import { formatDurationMs } from '../parse';

/** The JSON shape of `status --json` (and of `watch --json`'s `result` event), as docs/cli.md's command table documents it. */
export function statusJson(view: RunView): Record<string, unknown> {
  return {
    workflowId: view.workflowId,
    status: view.status,
    turns: view.turns,
    pendingApproval: view.pendingApproval,
    usage: normalizeUsage(view.usage),
    costUsd: view.costUsd ?? null,
    budget: view.budget ?? null,
    result: view.result,
    runId: view.runId,
    executionStatus: view.executionStatus,
    details: view.details,
    decisions: view.decisions,
    session: view.session,
    workspace: view.workspace ?? null,
    rules: view.rules ?? [],
    queuedMessages: view.queuedMessages ?? [],
    pause: view.pause ?? null,
    chat: view.chat ?? false,
    model: view.model ?? null,
    contextWindow: view.contextWindow ?? null,
    contextStrategy: view.contextStrategy ?? null,
    gitAtClose: view.gitAtClose ?? [],
  };
}

/** The limits in one line, for people: `turns 12, cost $2, tokens 50000, duration 30m`. */
export function limitsLine(l: BudgetLimits): string {
  return [
    `turns ${l.maxTurns}`,
    ...(l.maxCostUsd !== undefined ? [`cost $${l.maxCostUsd}`] : []),
    ...(l.maxTokensTotal !== undefined ? [`tokens ${l.maxTokensTotal}`] : []),
    ...(l.maxDurationMs !== undefined ? [`duration ${formatDurationMs(l.maxDurationMs)}`] : []),
  ].join(', ');
}

/** A budget pause in words: `the cost budget is spent ($1.0200 of $1)`. */
export function budgetPauseLine(p: PauseState): string {
  const used = p.used ?? 0;
  const limit = p.limit ?? 0;
  switch (p.budget) {
    case 'cost':
      return `the cost budget is spent ($${used.toFixed(4)} of $${limit})`;
    case 'tokens':
      return `the token budget is spent (${used} of ${limit} tokens)`;
    case 'duration':
      return `the duration budget is spent (${formatDurationMs(Math.round(used))} of ${formatDurationMs(limit)})`;
    default:
      return `the turn budget is spent (${used} of ${limit} model calls)`;
  }
}

/**
 * How long an approval rule holds, in words (`approve`, `rules`, `status` and `watch` print it): the run's state
 * holds the rules (src/workflows/run-state.ts), carried across continue-as-new, kept by a rewind (it changes the
 * conversation and the files, not the rules) and copied into a sub-agent's input when the sub-agent starts
 * (src/workflows/subagent.ts `childInput`); `start` and `fork` give a run none (a fork takes its source's input,
 * which holds no rules unless the source is a sub-agent: docs/cli.md, "Rules").
 */
export const RULE_SCOPE =
  'for this run only, until it ends or the rule is removed (kept across continue-as-new and rewinds; a sub-agent started later gets a copy); a new run or a fork starts with none';

/** One line per rule, for people, then the rules' scope ({@link RULE_SCOPE}); `no approval rules` when there are none. */
export function ruleLines(rules: readonly ApprovalRule[]): string[] {
  if (rules.length === 0) return ['no approval rules'];
  return [
    ...rules.map(
      (r) =>
        `${r.id}. ${r.kind === 'exact' ? 'exactly' : 'starting with'} ${jsonText(r.text)}  (by ${safeText(r.by, false)}, ${r.at}, from ${safeText(r.toolUseId, false)})`,
    ),
    `(${RULE_SCOPE})`,
  ];
}

/**
 * A closed run's `git at close:` lines (`status`, `watch`, `transcript`): for each session whose git audit found
 * something at close, a heading (`git at close:`, `git at close (session 2 of 3):`), then each part of what it moved or
 * named on a line of its own and each finding on one under it, indented (`RunView.gitAtCloseLines`; a worker before
 * them gave one line a session, shown as it is). Each line escaped on one line (safeText): print with shownText.
 * @param indent put before every line ('' for `watch` and `transcript`, two spaces for `status`)
 */
export function gitAtCloseLines(view: { gitAtClose?: string[]; gitAtCloseLines?: string[][] }, indent = ''): string[] {
  const sessions = view.gitAtCloseLines ?? (view.gitAtClose ?? []).map((n) => [n]);
  return sessions.flatMap((lines, i) => [
    `${indent}git at close${sessions.length > 1 ? ` (session ${i + 1} of ${sessions.length})` : ''}:`,
    ...lines.map((l) => `${indent}  ${safeText(l, false)}`),
  ]);
}

/**
 * A pending text editor change: what and where, the unified diff line by line (hidden
 * characters escaped, `display`), its SHA-256 (the hash `approve --sha` names).
 */
export function editLines(p: PendingApproval): string[] {
  const e = p.edit!;
  return [
    safeText(`  pending approval: text editor ${e.command} `, false) +
      `${safeText(e.path, false)}${safeText(`  [${p.toolUseId}, since ${p.requestedAt}]`, false)}`,
    ...p.display
      .replace(/\n$/, '')
      .split('\n')
      .map((l) => `    ${l}`),
    ...p.warnings.map((w) => `    ⚠ ${w}`),
    `    sha256 ${shortHash(p.commandSha256)} (${p.commandSha256})`,
  ];
}

/**
 * What `approve`/`deny` and `watch`'s prompt print once a text editor change is decided: `label` (`approved toolu_x
 * by alice: `, plain text) with what and where, then the diff line by line and its hash as {@link editLines} shows them.
 */
export function editDecisionLines(label: string, pending: PendingApproval): string[] {
  const [, ...rest] = editLines(pending);
  return [safeText(`${label}text editor ${pending.edit!.command} `, false) + safeText(pending.edit!.path, false), ...rest];
}

/**
 * A pending command as `watch` shows it on one line ({@link displayCommand}); for a text editor change its diff's
 * whitespace warnings ({@link diffWarnings}: a change of whitespace alone, a line that ends in a blank) come first, and
 * a CRLF file's line endings are no carriage return to warn about ({@link carriageReturnsJudged}).
 */
export function pendingCommandDisplay(p: PendingApproval): CommandDisplay {
  const d = displayCommand(p.command);
  return p.edit ? { ...d, warnings: [...diffWarnings(p.command), ...carriageReturnsJudged(p.command, d.warnings)] } : d;
}
