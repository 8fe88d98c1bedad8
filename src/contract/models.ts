/**
 * TEMPORARY stand-in for the model table (replaced when the model table lands).
 * Deterministic (workflow code).
 */
import type { ResolvedInput } from './input';

/** What the request step needs of a model. */
export interface ModelInfo {
  contextWindow: number;
  cacheTtl1h: boolean;
}

/** The run's model entry. */
export function modelInfoOf(input: ResolvedInput): ModelInfo {
  void input;
  return { contextWindow: 200_000, cacheTtl1h: true };
}

/** The run's context window in tokens. */
export function contextWindowOf(input: ResolvedInput): number {
  return (input as { contextWindow?: number }).contextWindow ?? modelInfoOf(input).contextWindow;
}
