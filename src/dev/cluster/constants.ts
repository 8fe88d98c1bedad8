/**
 * The facts the local cluster (`npm run cluster`) and docker-compose.yml
 * share: the Temporal Server version, the schema folders, the namespace,
 * the history shard count and the dynamic config file. Both are checked
 * against each other by test/unit/cluster/compose.test.ts.
 *
 * MAINTENANCE: keep in sync with docker-compose.yml (the test fails when
 * they disagree).
 */
import path from 'node:path';
import { PROJECT_ROOT } from '../../settings';

/**
 * Temporal Server version of the cluster: the Go module
 * `go.temporal.io/server` at `v<this>` (v1.32.1 builds with go 1.26.8;
 * v1.32.2 needs a newer go), and the `temporalio/server` and
 * `temporalio/admin-tools` image tags of docker-compose.yml. The Temporal
 * CLI 1.9.1 dev server is Server 1.32 too.
 */
export const TEMPORAL_SERVER_VERSION = '1.32.1';

/** The Go module of the server and its schema tool. */
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';

/** Go packages installed with `go install <package>@v<version>`: the server and the SQL schema tool. */
export const GO_PACKAGES = {
  server: `${TEMPORAL_SERVER_MODULE}/cmd/server`,
  sqlTool: `${TEMPORAL_SERVER_MODULE}/cmd/tools/sql`,
} as const;

/** The SQL plugin of the server's persistence and visibility stores (PostgreSQL 12 and later). */
export const SQL_PLUGIN = 'postgres12';

/**
 * The two databases and the schema folder of each, relative to the
 * server module's root (the admin-tools image has the same tree under
 * `/etc/temporal/schema`). Each is set up with `setup-schema -v 0.0` and
 * then `update-schema -d <folder>`, the server's documented procedure.
 */
export const DATABASES = [
  { name: 'temporal', schemaDir: 'schema/postgresql/v12/temporal/versioned' },
  { name: 'temporal_visibility', schemaDir: 'schema/postgresql/v12/visibility/versioned' },
] as const;

/** The PostgreSQL role the servers connect as (a superuser of the cluster's own PostgreSQL). */
export const DB_USER = 'temporal';

/**
 * History shards. Fixed when the `temporal` database is first set up: a
 * server started with another count refuses to run on it. 4 is the
 * server's development value; it limits how far history can spread over
 * hosts, which two hosts on one machine do not reach.
 */
export const NUM_HISTORY_SHARDS = 4;

/** Name of the (single) cluster, as GetClusterInfo reports it; the server's default. */
export const CLUSTER_NAME = 'active';

/** The namespace runs go to, registered by `up` (and by the compose file's setup container). */
export const CLUSTER_NAMESPACE = 'default';

/** How long closed runs stay in the namespace, in days. */
export const NAMESPACE_RETENTION_DAYS = 7;

/**
 * The dynamic config file of both the local cluster's servers and the
 * compose file's server (mounted at {@link COMPOSE_DYNAMIC_CONFIG_PATH}).
 * The servers re-read it every 10 s.
 */
export const DYNAMIC_CONFIG_FILE = path.join(PROJECT_ROOT, 'deploy', 'temporal', 'dynamic-config.yaml');

/** Where docker-compose.yml mounts {@link DYNAMIC_CONFIG_FILE} in the server container. */
export const COMPOSE_DYNAMIC_CONFIG_PATH = '/etc/temporal/config/dynamicconfig/agent-jobs.yaml';

/**
 * The services each server process runs, in the order the server names
 * them. Every process runs all four, so either can lose the other.
 */
export const SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;

/** One of {@link SERVICES}. */
export type ServiceName = (typeof SERVICES)[number];

/** How many server processes `up` starts. */
export const SERVER_COUNT = 2;

/** The Debian package installed when no PostgreSQL is found (root only), pinned to bookworm's version. */
export const POSTGRES_APT_PACKAGE = 'postgresql=15+248+deb12u1';
