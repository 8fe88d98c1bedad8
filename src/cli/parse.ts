/** Option parsers for commander: each throws InvalidArgumentError with the accepted form. */
import { InvalidArgumentError } from 'commander';
import { CLIENT_TOOLS, type ClientToolName } from '../contract/text-editor';

/** A positive integer (e.g. `--max-turns 20`). */
export function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('expected a positive integer');
  return Number(value);
}

/** A positive decimal number (e.g. `--max-cost 2.50`). */
export function positiveNumber(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !(Number(value) > 0)) throw new InvalidArgumentError('expected a positive number such as 2.5');
  return Number(value);
}

/** A TCP port, 1-65535. */
export function port(value: string): number {
  const n = positiveInt(value);
  if (n > 65_535) throw new InvalidArgumentError('expected a port between 1 and 65535');
  return n;
}

/**
 * A duration in ms: a bare number is ms; a number with a unit
 * (`500ms`, `30s`, `5m`, `2h`, `1d`) is converted.
 */
export function durationMs(value: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as 30s, 5m, 2h or a number of ms');
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 'ms') as 'ms'];
  return Math.round(Number(m[1]) * unit);
}

/**
 * A duration in ms as {@link durationMs} reads it back: the largest unit
 * (`d`, `h`, `m`, `s`) that divides it, else ms (`120000` → `2m`).
 */
export function formatDurationMs(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * A prefix of a sha256 in hex (`--sha 3f2a9b0c1d2e`): 4 to 64 hex digits,
 * any case (returned in lowercase). Fewer than 4 would match almost any command.
 */
export function hexPrefix(value: string): string {
  if (!/^[0-9a-fA-F]{4,64}$/.test(value))
    throw new InvalidArgumentError("expected 4 to 64 hex digits of the command's sha256 (status shows 12)");
  return value.toLowerCase();
}

/** `--tools bash,text_editor`: each once, from {@link CLIENT_TOOLS}. */
export function toolList(value: string): ClientToolName[] {
  const names = value
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const bad = names.find((n) => !(CLIENT_TOOLS as readonly string[]).includes(n));
  if (bad !== undefined || names.length === 0 || new Set(names).size !== names.length) {
    throw new InvalidArgumentError(
      `expected a comma-separated list of ${CLIENT_TOOLS.join(', ')}, each once (got ${JSON.stringify(value)})`,
    );
  }
  return names as ClientToolName[];
}
