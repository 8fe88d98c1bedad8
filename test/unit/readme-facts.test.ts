/**
 * The table of defaults, limits and status values is the one
 * `npm run docs` writes from the code (src/dev/scripts/readme-facts.ts): this
 * fails when a constant changed and docs/configuration.md was not regenerated.
 */
import { readFileSync } from 'node:fs';
import { DEFAULT_MAX_TURNS, DEFAULT_MODEL } from '../../src/config';
import { FINAL_STATUSES, OPEN_STATUSES } from '../../src/contract';
import { agentRunInputSchema } from '../../src/contract/input';
import { FACTS_END, FACTS_START, FACTS_PATH, factsTable, withFacts } from '../../src/dev/scripts/readme-facts';

const readme = readFileSync(FACTS_PATH, 'utf8');

test('docs/configuration.md holds the facts table, as npm run docs writes it from the code', () => {
  expect(readme).toContain(FACTS_START);
  expect(readme).toContain(FACTS_END);
  // Out of date: run `npm run docs` and commit docs/configuration.md.
  expect(withFacts(readme)).toBe(readme);
});

test('the table is built from the constants, the input schema and the status lists', () => {
  const table = factsTable();
  expect(table).toContain(`| \`${DEFAULT_MODEL}\` |`);
  expect(table).toContain(`| ${DEFAULT_MAX_TURNS} | 1–${agentRunInputSchema.shape.maxTurns.unwrap().maxValue!.toLocaleString('en-US')} |`);
  for (const s of [...OPEN_STATUSES, ...FINAL_STATUSES]) expect(table).toContain(`\`${s}\``);
});

test('withFacts replaces only what lies between the markers, and needs them', () => {
  expect(withFacts(`a\n${FACTS_START}\nold\n${FACTS_END}\nb`, 'T')).toBe(`a\n${FACTS_START}\nT\n${FACTS_END}\nb`);
  expect(() => withFacts('no markers', 'T')).toThrow(/has no <!-- facts:start -->/);
});
