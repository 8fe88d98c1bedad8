/**
 * docker-compose.yml and the local cluster (`npm run cluster`) describe the
 * same Temporal deployment: server version, schema setup, namespace,
 * search attributes, dynamic config and worker settings. The compose file
 * cannot import the cluster's constants, so this test reads both and
 * fails when they drift; each mutation of a copy below shows the check
 * catches that kind of drift.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { composeMismatches } from './compose-check';
import { DYNAMIC_CONFIG_FILE, TEMPORAL_SERVER_VERSION } from '../../../src/dev/cluster/constants';
import { TEMPORAL_CLI_VERSION } from '../../../src/dev/devserver';

const COMPOSE = readFileSync(path.resolve(__dirname, '../../../docker-compose.yml'), 'utf8');

test('docker-compose.yml agrees with the cluster script', () => {
  expect(composeMismatches(COMPOSE)).toEqual([]);
});

/** Replaces exactly one occurrence of `from` (the mutation must hit something). */
function mutate(from: string | RegExp, to: string): string {
  const hits = typeof from === 'string' ? COMPOSE.split(from).length - 1 : (COMPOSE.match(new RegExp(from, 'g')) ?? []).length;
  if (hits < 1) throw new Error(`the mutation finds no ${String(from)} in docker-compose.yml`);
  return COMPOSE.replace(from, to);
}

const MUTATIONS: Array<[string, () => string, RegExp]> = [
  [
    'an older server image',
    () => mutate(`temporalio/server:${TEMPORAL_SERVER_VERSION}`, 'temporalio/server:1.32.0'),
    /temporal runs temporalio\/server:1\.32\.0/,
  ],
  [
    'an older admin-tools image',
    () => mutate(`temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`, 'temporalio/admin-tools:1.29'),
    /admin-tools:1\.29, not version/,
  ],
  [
    'the visibility schema from the wrong folder',
    () =>
      mutate(
        'update-schema -d /etc/temporal/schema/postgresql/v12/visibility/versioned',
        'update-schema -d /etc/temporal/schema/postgresql/v12/temporal/versioned',
      ),
    /lacks "--db temporal_visibility update-schema/,
  ],
  ['no setup-schema step', () => mutate('sql --db temporal setup-schema -v 0.0\n', ''), /lacks "--db temporal setup-schema -v 0\.0"/],
  ['another plugin', () => mutate(/DB: postgres12/, 'DB: mysql8'), /DB is mysql8/],
  ['another shard count', () => mutate("NUM_HISTORY_SHARDS: '4'", "NUM_HISTORY_SHARDS: '8'"), /NUM_HISTORY_SHARDS is 8/],
  [
    'no dynamic config mount',
    () => mutate(/ {6}- \.\/deploy\/temporal\/dynamic-config\.yaml:.*\n/, ''),
    /does not mount \.\/deploy\/temporal\/dynamic-config\.yaml/,
  ],
  [
    'another dynamic config path',
    () => mutate(/DYNAMIC_CONFIG_FILE_PATH: .*/, 'DYNAMIC_CONFIG_FILE_PATH: /etc/temporal/config/dynamicconfig/docker.yaml'),
    /DYNAMIC_CONFIG_FILE_PATH is/,
  ],
  ['another namespace', () => mutate('namespace create -n default', 'namespace create -n agents'), /does not create namespace default/],
  ['another retention', () => mutate('--retention 7d', '--retention 1d'), /retention 7d/],
  [
    'a search attribute missing',
    () => mutate(' --name AgentAwaitingSince --type Datetime', ''),
    /creates search attributes .* not .*AgentAwaitingSince=Datetime/,
  ],
  [
    'a search attribute of another type',
    () => mutate('--name AgentCostUsd --type Double', '--name AgentCostUsd --type Int'),
    /AgentCostUsd=Int/,
  ],
  [
    'the worker on another namespace',
    () => mutate('TEMPORAL_NAMESPACE: default', 'TEMPORAL_NAMESPACE: other'),
    /TEMPORAL_NAMESPACE is other/,
  ],
  [
    'a worker setting nobody reads',
    () => mutate('TEMPORAL_UI_URL:', 'AGENT_JOBS_UI_URL:'),
    /AGENT_JOBS_UI_URL, which docs\/configuration.md's Configuration table does not list/,
  ],
];

test.each(MUTATIONS)('the check catches %s', (_what, make, message) => {
  const found = composeMismatches(make());
  expect(found.join('\n')).toMatch(message);
});

test('the dynamic config file both use is a map of keys to lists of {value, constraints}', () => {
  const doc = parse(readFileSync(DYNAMIC_CONFIG_FILE, 'utf8')) as Record<string, unknown>;
  expect(Object.keys(doc).length).toBeGreaterThan(0);
  for (const [key, v] of Object.entries(doc)) {
    expect(key).toMatch(/^[a-z][A-Za-z0-9]*(\.[A-Za-z0-9]+)+$/);
    expect(Array.isArray(v)).toBe(true);
    for (const entry of v as Array<Record<string, unknown>>) expect(Object.keys(entry).sort()).toEqual(['constraints', 'value']);
  }
});

test('the cluster runs the Temporal Server of the pinned CLI dev server (1.32)', () => {
  // Temporal CLI 1.9.x ships Server 1.32: tests on the dev server and on the cluster run the same server.
  expect(TEMPORAL_CLI_VERSION).toMatch(/^1\.9\./);
  expect(TEMPORAL_SERVER_VERSION).toMatch(/^1\.32\./);
});
