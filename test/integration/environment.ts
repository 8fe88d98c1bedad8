/**
 * The integration suite's Jest environment: Node's, on the dev server of
 * the Jest worker that runs the test file. The global setup starts one
 * server per worker (test/integration/global-setup.ts) and lists them in
 * `AGENT_JOBS_TEST_SERVERS`; worker `JEST_WORKER_ID` n (1-based, kept by
 * the process Jest starts again after a suite that left too large a heap)
 * takes the n-th and sets `AGENT_JOBS_TEST_TEMPORAL_ADDRESS` to it, so two
 * test files that run at the same time never share a server: its task
 * queues (the workers of one would take the other's workflow tasks and
 * activities), or its visibility lists (`list`, `pending`, the replay of a
 * bed's runs). Set in this worker process's own environment, before Node's
 * environment copies it for the test file, so the processes a test starts
 * without an explicit environment inherit it too.
 */
import NodeEnvironment from 'jest-environment-node';

/** The environment variable the global setup lists the suite's dev servers in (JSON, {@link SuiteServer}[]). */
export const SUITE_SERVERS_ENV = 'AGENT_JOBS_TEST_SERVERS';

/** One of the suite's dev servers: its gRPC address (`127.0.0.1:<port>`) and port. */
export interface SuiteServer {
  address: string;
  port: number;
}

export default class IntegrationEnvironment extends NodeEnvironment {
  constructor(...args: ConstructorParameters<typeof NodeEnvironment>) {
    const servers = JSON.parse(process.env[SUITE_SERVERS_ENV] ?? '[]') as SuiteServer[];
    // Running in band, Jest sets JEST_WORKER_ID to 1 in its own process.
    const worker = Number(process.env.JEST_WORKER_ID ?? '1');
    const server = servers[(worker - 1) % Math.max(1, servers.length)];
    if (server) process.env.AGENT_JOBS_TEST_TEMPORAL_ADDRESS = server.address;
    super(...args);
  }
}
