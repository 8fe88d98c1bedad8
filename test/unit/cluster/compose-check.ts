/**
 * Where docker-compose.yml disagrees with the local cluster
 * (src/dev/cluster/constants.ts) and this project's settings: one line per
 * disagreement, empty when they agree. A function of the compose file's
 * text, so a test can feed it altered copies and see each one caught.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { SEARCH_ATTRIBUTES } from '../../../src/config';
import {
  CLUSTER_NAMESPACE,
  COMPOSE_DYNAMIC_CONFIG_PATH,
  DATABASES,
  DYNAMIC_CONFIG_FILE,
  NAMESPACE_RETENTION_DAYS,
  NUM_HISTORY_SHARDS,
  SQL_PLUGIN,
  TEMPORAL_SERVER_VERSION,
} from '../../../src/dev/cluster/constants';

const ROOT = path.resolve(__dirname, '../../..');

interface Service {
  image?: string;
  environment?: Record<string, string | number | boolean>;
  command?: string | string[];
  volumes?: string[];
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

function commandText(s: Service | undefined): string {
  const c = s?.command;
  return Array.isArray(c) ? c.join('\n') : (c ?? '');
}

/**
 * The environment variable names the Configuration table of docs/configuration.md
 * documents: every backticked name in its first column, and the prefixes
 * it documents as `NAME*` (`TEMPORAL_TLS*`).
 */
export function documentedEnvNames(readme: string = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8')): {
  names: Set<string>;
  prefixes: string[];
} {
  const section = readme.slice(readme.indexOf('## Configuration'));
  const names = new Set<string>();
  const prefixes: string[] = [];
  for (const line of section.split('\n')) {
    const first = line.split('|')[1] ?? '';
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*)(\*?)`/g)) {
      if (m[2]) prefixes.push(m[1]!);
      else names.add(m[1]!);
    }
  }
  return { names, prefixes };
}

/**
 * Checks docker-compose.yml's text against the cluster's facts: the
 * server and admin-tools images at {@link TEMPORAL_SERVER_VERSION}; the
 * schema container creating both databases and running `setup-schema -v
 * 0.0` then `update-schema -d` each database's versioned folder; the
 * server on `postgres12` with {@link NUM_HISTORY_SHARDS} shards and the
 * project's dynamic config file mounted where DYNAMIC_CONFIG_FILE_PATH
 * points; the setup container registering {@link CLUSTER_NAMESPACE} with
 * the retention and exactly SEARCH_ATTRIBUTES (names and types); the
 * worker on that namespace with only documented variables (AGENT_JOBS_*
 * ones also read in src/settings.ts).
 * @returns one line per disagreement
 */
export function composeMismatches(composeText: string): string[] {
  const out: string[] = [];
  const doc = parse(composeText, { merge: true }) as { services?: Record<string, Service> };
  const services = doc.services ?? {};
  const all = Object.entries(services);

  const serverImages = all.filter(([, s]) => s.image?.startsWith('temporalio/server:'));
  const adminImages = all.filter(([, s]) => s.image?.startsWith('temporalio/admin-tools:'));
  if (serverImages.length === 0) out.push('no service runs temporalio/server');
  if (adminImages.length === 0) out.push('no service runs temporalio/admin-tools');
  for (const [name, s] of [...serverImages, ...adminImages]) {
    const tag = s.image!.split(':')[1];
    if (tag !== TEMPORAL_SERVER_VERSION) out.push(`${name} runs ${s.image}, not version ${TEMPORAL_SERVER_VERSION}`);
  }

  const schemaJobs = adminImages.filter(([, s]) => commandText(s).includes('update-schema'));
  if (schemaJobs.length !== 1) out.push(`expected one admin-tools service that sets up the schemas, found ${schemaJobs.length}`);
  const schema = commandText(schemaJobs[0]?.[1]);
  for (const db of DATABASES) {
    const dir = `/etc/temporal/${db.schemaDir}`;
    const steps = [`--db ${db.name} create-database`, `--db ${db.name} setup-schema -v 0.0`, `--db ${db.name} update-schema -d ${dir}`];
    const at = steps.map((step) => new RegExp(`${step.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(\\s|$)`, 'm').exec(schema)?.index ?? -1);
    steps.forEach((step, i) => at[i]! < 0 && out.push(`the schema setup lacks "${step}"`));
    if (at.every((i) => i >= 0) && !(at[0]! < at[1]! && at[1]! < at[2]!)) out.push(`the schema steps of ${db.name} are out of order`);
  }
  if (!schema.includes(`--plugin ${SQL_PLUGIN}`)) out.push(`the schema tool does not use the ${SQL_PLUGIN} plugin`);

  const server = serverImages[0]?.[1];
  const env = server?.environment ?? {};
  if (String(env.DB) !== SQL_PLUGIN) out.push(`the server's DB is ${String(env.DB)}, not ${SQL_PLUGIN}`);
  if (String(env.NUM_HISTORY_SHARDS) !== String(NUM_HISTORY_SHARDS))
    out.push(`the server's NUM_HISTORY_SHARDS is ${String(env.NUM_HISTORY_SHARDS)}, not ${NUM_HISTORY_SHARDS}`);
  if (env.DYNAMIC_CONFIG_FILE_PATH !== COMPOSE_DYNAMIC_CONFIG_PATH)
    out.push(`the server's DYNAMIC_CONFIG_FILE_PATH is ${String(env.DYNAMIC_CONFIG_FILE_PATH)}, not ${COMPOSE_DYNAMIC_CONFIG_PATH}`);
  const mount = `./${path.relative(ROOT, DYNAMIC_CONFIG_FILE)}:${COMPOSE_DYNAMIC_CONFIG_PATH}`;
  if (!(server?.volumes ?? []).some((v) => v === mount || v === `${mount}:ro`)) out.push(`the server does not mount ${mount}`);

  const setup = adminImages.map(([, s]) => commandText(s)).find((c) => c.includes('search-attribute create')) ?? '';
  if (!setup) out.push('no admin-tools service creates the search attributes');
  if (!new RegExp(`namespace create -n ${CLUSTER_NAMESPACE} --retention ${NAMESPACE_RETENTION_DAYS}d(\\s|$)`, 'm').test(setup))
    out.push(`the setup does not create namespace ${CLUSTER_NAMESPACE} with retention ${NAMESPACE_RETENTION_DAYS}d`);
  const saLine = setup.split('\n').find((l) => l.includes('search-attribute create')) ?? '';
  if (!new RegExp(`-n ${CLUSTER_NAMESPACE}\\s`).test(saLine))
    out.push(`the search attributes are not created in namespace ${CLUSTER_NAMESPACE}`);
  const created = [...saLine.matchAll(/--name (\S+) --type (\S+)/g)].map((m) => `${m[1]}=${m[2]}`).sort();
  const wanted = SEARCH_ATTRIBUTES.map((a) => `${a.name}=${a.type}`).sort();
  if (created.join(' ') !== wanted.join(' ')) out.push(`the setup creates search attributes ${created.join(' ')}, not ${wanted.join(' ')}`);

  const worker = services.worker;
  const wenv = worker?.environment ?? {};
  if (!worker) out.push('no worker service');
  if (wenv.TEMPORAL_NAMESPACE !== CLUSTER_NAMESPACE)
    out.push(`the worker's TEMPORAL_NAMESPACE is ${String(wenv.TEMPORAL_NAMESPACE)}, not ${CLUSTER_NAMESPACE}`);
  const documented = documentedEnvNames();
  // The worker reads its settings in src/settings.ts; the CLI in the same container (`docker compose exec worker agent-jobs start`) in src/cli.
  const readers = [path.join(ROOT, 'src', 'settings.ts'), ...filesUnder(path.join(ROOT, 'src', 'cli'))];
  const sources = readers.map((f) => readFileSync(f, 'utf8')).join('\n');
  for (const name of Object.keys(wenv)) {
    if (!documented.names.has(name) && !documented.prefixes.some((prefix) => name.startsWith(prefix)))
      out.push(`the worker sets ${name}, which docs/configuration.md's Configuration table does not list`);
    if (name.startsWith('AGENT_JOBS_') && !sources.includes(`'${name}'`) && !sources.includes(`env.${name}`))
      out.push(`the worker sets ${name}, which neither src/settings.ts nor src/cli reads`);
  }
  return out;
}
