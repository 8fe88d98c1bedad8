/**
 * What the local cluster runs, found or installed into git-ignored
 * folders: the pinned Temporal server and its SQL schema tool (`go
 * install` with a local GOBIN, the schema folders copied next to them),
 * and PostgreSQL (on the PATH, else Debian's package when root).
 */
import { cpSync, existsSync, readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { execa } from '../testing/exec';
import { PROJECT_ROOT } from '../../settings';
import { DATABASES, GO_PACKAGES, POSTGRES_APT_PACKAGE, TEMPORAL_SERVER_MODULE, TEMPORAL_SERVER_VERSION } from './constants';

/** Git-ignored folder of the pinned server build: `bin/server`, `bin/sql` and `schema/`. */
export const SERVER_TOOLS_DIR = path.join(PROJECT_ROOT, '.tools', 'temporal-server', TEMPORAL_SERVER_VERSION);

/** The installed Temporal server binaries and the schema folders of its version. */
export interface ServerTools {
  /** The server binary (`go.temporal.io/server/cmd/server`). */
  server: string;
  /** The SQL schema tool (`go.temporal.io/server/cmd/tools/sql`). */
  sqlTool: string;
  /** Absolute schema folder by database name ({@link DATABASES}). */
  schemaDirs: Record<string, string>;
}

/** A tool the cluster needs is missing and cannot be installed here. The message says what to do. */
export class ClusterToolMissingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterToolMissingError';
  }
}

async function onPath(program: string): Promise<string | null> {
  const r = await execa('bash', ['-c', 'command -v "$1"', 'bash', program], { reject: false });
  return r.exitCode === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

/** `go` on the PATH, else Go's default install folder `/usr/local/go/bin/go`; null when neither. */
export async function findGo(): Promise<string | null> {
  return (await onPath('go')) ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null);
}

function toolsPaths(dir: string = SERVER_TOOLS_DIR): ServerTools {
  const schemaDirs: Record<string, string> = {};
  for (const db of DATABASES) schemaDirs[db.name] = path.join(dir, db.schemaDir);
  return { server: path.join(dir, 'bin', 'server'), sqlTool: path.join(dir, 'bin', 'sql'), schemaDirs };
}

/** The installed tools when all of them are in {@link SERVER_TOOLS_DIR}, else null. */
export function installedServerTools(): ServerTools | null {
  const t = toolsPaths();
  return existsSync(t.server) && existsSync(t.sqlTool) && Object.values(t.schemaDirs).every((d) => existsSync(d)) ? t : null;
}

/**
 * The pinned Temporal server and schema tool, installed when missing:
 * `go install` of both packages at `v`{@link TEMPORAL_SERVER_VERSION} with
 * `GOBIN` = `<tools>/bin` and `GOTOOLCHAIN=local` (about 6 minutes on 2
 * idle cores the first time, ~40 s with Go's build cache), then the schema
 * folders copied from the module (`go mod download -json` names its
 * folder) into `<tools>/schema`, so later runs need no Go.
 * @param say progress lines for the user
 * @throws ClusterToolMissingError when there is no Go, or the build fails (with its last lines)
 */
export async function ensureServerTools(say: (line: string) => void): Promise<ServerTools> {
  const have = installedServerTools();
  if (have) return have;
  const t = toolsPaths();
  const go = await findGo();
  const rel = path.relative(process.cwd(), SERVER_TOOLS_DIR) || SERVER_TOOLS_DIR;
  if (!go)
    throw new ClusterToolMissingError(
      `Go is not installed (no \`go\` on the PATH nor /usr/local/go/bin/go); the cluster builds Temporal Server ${TEMPORAL_SERVER_VERSION} with it: ` +
        `install Go 1.25 or later (https://go.dev/doc/install, or Debian's golang package where it is new enough) and run up again`,
    );
  const env = { ...process.env, GOBIN: path.join(SERVER_TOOLS_DIR, 'bin'), GOTOOLCHAIN: 'local' };
  const version = `v${TEMPORAL_SERVER_VERSION}`;
  if (!existsSync(t.server) || !existsSync(t.sqlTool)) {
    const pkgs = [GO_PACKAGES.server, GO_PACKAGES.sqlTool].map((p) => `${p}@${version}`);
    say(`building Temporal Server ${TEMPORAL_SERVER_VERSION} and its schema tool: GOBIN=${rel}/bin ${go} install ${pkgs.join(' ')}`);
    say('  (minutes the first time: 6 on 2 idle cores; about 40 s once Go has the build cached)');
    const started = Date.now();
    const r = await execa(go, ['install', ...pkgs], { env, reject: false, all: true });
    if (r.exitCode !== 0 || !existsSync(t.server) || !existsSync(t.sqlTool)) {
      const tail = (r.all ?? '').trim().split('\n').slice(-8).join('\n');
      throw new ClusterToolMissingError(`go install of Temporal Server ${version} failed (exit ${r.exitCode}):\n${tail}`);
    }
    say(`  built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  const dl = await execa(go, ['mod', 'download', '-json', `${TEMPORAL_SERVER_MODULE}@${version}`], { env, reject: false });
  let moduleDir: string | undefined;
  try {
    moduleDir = (JSON.parse(dl.stdout) as { Dir?: string }).Dir;
  } catch {
    moduleDir = undefined;
  }
  if (!moduleDir || !existsSync(moduleDir))
    throw new ClusterToolMissingError(
      `go mod download ${TEMPORAL_SERVER_MODULE}@${version} did not name the module's folder: ${dl.stderr.trim()}`,
    );
  for (const db of DATABASES) {
    const from = path.join(moduleDir, db.schemaDir);
    if (!existsSync(from)) throw new ClusterToolMissingError(`the module ${TEMPORAL_SERVER_MODULE}@${version} has no ${db.schemaDir}`);
    cpSync(from, t.schemaDirs[db.name]!, { recursive: true });
  }
  say(`  schema folders copied to ${rel}/schema`);
  return t;
}

/** PostgreSQL's server programs, all from one folder. */
export interface PostgresTools {
  /** The folder of `postgres`, `initdb`, `pg_ctl`, `psql`. */
  binDir: string;
  postgres: string;
  initdb: string;
  pgCtl: string;
  psql: string;
  /** `postgres --version`'s number, e.g. `15.18`. */
  version: string;
}

async function postgresAt(binDir: string): Promise<PostgresTools | null> {
  const p = (name: string): string => path.join(binDir, name);
  if (!['postgres', 'initdb', 'pg_ctl', 'psql'].every((n) => existsSync(p(n)))) return null;
  const v = await execa(p('postgres'), ['--version'], { reject: false });
  const version = /(\d+(?:\.\d+)*)/.exec(v.stdout)?.[1] ?? 'unknown';
  return { binDir, postgres: p('postgres'), initdb: p('initdb'), pgCtl: p('pg_ctl'), psql: p('psql'), version };
}

/**
 * PostgreSQL's programs: the folder of `postgres` on the PATH (symlinks
 * resolved: Debian's `postgres` lives in `/usr/lib/postgresql/<major>/bin`
 * with its `initdb` and `pg_ctl`), else the newest
 * `/usr/lib/postgresql/<major>/bin`; null when neither.
 */
export async function findPostgres(): Promise<PostgresTools | null> {
  const onPathBin = await onPath('postgres');
  if (onPathBin) {
    const found = await postgresAt(path.dirname(realpathSync(onPathBin)));
    if (found) return found;
  }
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const majors = readdirSync(root)
    .filter((d) => /^\d+$/.test(d))
    .sort((a, b) => Number(b) - Number(a));
  for (const m of majors) {
    const found = await postgresAt(path.join(root, m, 'bin'));
    if (found) return found;
  }
  return null;
}

/**
 * PostgreSQL's programs, installed when missing: as root with apt-get,
 * Debian's {@link POSTGRES_APT_PACKAGE} (pinned; `apt-get update` first
 * when the package lists lack it). Debian's package also sets up and
 * starts its own `main` cluster on port 5432; the local cluster does not
 * use it.
 * @throws ClusterToolMissingError when none is found and this is not root on a machine with apt-get, or the install fails
 */
export async function ensurePostgres(say: (line: string) => void): Promise<PostgresTools> {
  const found = await findPostgres();
  if (found) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = await onPath('apt-get');
  if (!isRoot || !apt)
    throw new ClusterToolMissingError(
      `PostgreSQL is not installed (no \`postgres\` on the PATH nor in /usr/lib/postgresql/*/bin) and ${isRoot ? 'there is no apt-get' : 'this is not root'}: ` +
        `install it (Debian: \`sudo apt-get install ${POSTGRES_APT_PACKAGE}\`) and run up again`,
    );
  say(`installing PostgreSQL: apt-get install -y --no-install-recommends ${POSTGRES_APT_PACKAGE}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = (): Promise<{ exitCode?: number; all?: string }> =>
    execa(apt, ['install', '-y', '--no-install-recommends', POSTGRES_APT_PACKAGE], { env, reject: false, all: true });
  let r = await install();
  if (r.exitCode !== 0) {
    say('  apt-get update (the package lists lack it)');
    await execa(apt, ['update'], { env, reject: false });
    r = await install();
  }
  const now = await findPostgres();
  if (r.exitCode !== 0 || !now) {
    const tail = (r.all ?? '').trim().split('\n').slice(-5).join('\n');
    throw new ClusterToolMissingError(`apt-get install ${POSTGRES_APT_PACKAGE} failed (exit ${r.exitCode}):\n${tail}`);
  }
  return now;
}
