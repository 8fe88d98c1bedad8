/**
 * The local cluster's generated server configs: every port distinct, each
 * process on its own gRPC and membership ports, and the YAML the server
 * reads has the shape the server's own postgres12 config has (parsed back
 * with a YAML parser, not compared as text).
 */
import { parse } from 'yaml';
import {
  allocateServerPorts,
  clusterPortRange,
  frontendAddress,
  portsOf,
  serverConfig,
  serverConfigYaml,
  LOOPBACK,
} from '../../../src/dev/cluster/config';
import { DATABASES, NUM_HISTORY_SHARDS, SERVER_COUNT, SERVICES, SQL_PLUGIN, CLUSTER_NAME } from '../../../src/dev/cluster/constants';
import { toYaml } from '../../../src/dev/cluster/yaml';

describe('ports', () => {
  test('two servers get 16 distinct ports, none of the ones to avoid, a gRPC and a membership port per service', async () => {
    const avoid = [await allocateServerPorts(1).then((p) => p[0]!.frontend.grpc)];
    const servers = await allocateServerPorts(SERVER_COUNT, avoid);
    expect(servers).toHaveLength(2);
    const all = portsOf(servers);
    expect(all).toHaveLength(SERVER_COUNT * SERVICES.length * 2);
    expect(new Set(all).size).toBe(all.length);
    expect(all).not.toContain(avoid[0]);
    for (const s of servers) for (const svc of SERVICES) expect(s[svc].grpc).not.toBe(s[svc].membership);
    // cluster_membership.rpc_port is a SMALLINT, and ephemeral ports may be taken by outgoing connections during a restart.
    const { low, high } = clusterPortRange();
    expect(high).toBeLessThanOrEqual(32767);
    for (const p of all) expect(p >= low && p <= high).toBe(true);
    expect(frontendAddress(servers[0]!)).toBe(`127.0.0.1:${servers[0]!.frontend.grpc}`);
    expect(frontendAddress(servers[0]!)).not.toBe(frontendAddress(servers[1]!));
  });
});

interface Sql {
  pluginName: string;
  databaseName: string;
  connectAddr: string;
  user: string;
  password: string;
}
/** The parts of the server's config this test reads. */
interface ParsedConfig {
  log: { level: string };
  persistence: { numHistoryShards: number; defaultStore: string; visibilityStore: string; datastores: Record<string, { sql: Sql }> };
  global: { membership: { broadcastAddress: string } };
  services: Record<string, { rpc: { grpcPort: number; membershipPort: number; bindOnLocalHost: boolean; httpPort?: number } }>;
  clusterMetadata: { currentClusterName: string; clusterInformation: Record<string, { rpcAddress: string }> };
  dynamicConfigClient: unknown;
}

describe('server config', () => {
  const input = async (password = 'pw'): Promise<Parameters<typeof serverConfig>[0]> => {
    const [a, b] = await allocateServerPorts(2);
    return {
      ports: b!,
      postgresPort: 5999,
      postgresPassword: password,
      clusterRpcAddress: frontendAddress(a!),
      dynamicConfigFile: '/x/dynamic-config.yaml',
    };
  };

  test('the YAML parses back to the server config: postgres12 stores, shards, loopback membership, the four services, one cluster', async () => {
    const i = await input();
    const doc = parse(serverConfigYaml(i, 1)) as ParsedConfig;
    expect(doc).toEqual(serverConfig(i));
    expect(doc.persistence.numHistoryShards).toBe(NUM_HISTORY_SHARDS);
    const stores = doc.persistence.datastores;
    expect(stores[doc.persistence.defaultStore]!.sql).toMatchObject({
      pluginName: SQL_PLUGIN,
      databaseName: DATABASES[0].name,
      connectAddr: `${LOOPBACK}:5999`,
      user: 'temporal',
      password: 'pw',
    });
    expect(stores[doc.persistence.visibilityStore]!.sql).toMatchObject({ pluginName: SQL_PLUGIN, databaseName: DATABASES[1].name });
    expect(doc.global.membership.broadcastAddress).toBe('127.0.0.1');
    expect(Object.keys(doc.services).sort()).toEqual([...SERVICES].sort());
    for (const svc of SERVICES) {
      expect(doc.services[svc]!.rpc).toEqual({
        grpcPort: i.ports[svc].grpc,
        membershipPort: i.ports[svc].membership,
        bindOnLocalHost: true,
      });
      expect(doc.services[svc]!.rpc.httpPort).toBeUndefined();
    }
    expect(doc.clusterMetadata.currentClusterName).toBe(CLUSTER_NAME);
    expect(doc.clusterMetadata.clusterInformation[CLUSTER_NAME]!.rpcAddress).toBe(i.clusterRpcAddress);
    expect(doc.dynamicConfigClient).toEqual({ filepath: '/x/dynamic-config.yaml', pollInterval: '10s' });
    expect(doc.log.level).toBe('info');
  });

  test('a password with YAML syntax in it stays one string', async () => {
    const nasty = `a: b # c "d' \\ {e} [f] & *g !h %i\n- j`;
    const doc = parse(serverConfigYaml(await input(nasty), 0)) as ParsedConfig;
    expect(doc.persistence.datastores['postgres-default']!.sql.password).toBe(nasty);
  });
});

describe('toYaml', () => {
  test('nested objects, lists of objects, empty ones and odd keys round-trip; undefined keys are left out', () => {
    const value = {
      a: { b: [1, 'two', { c: true, d: null }], e: {}, f: [] },
      'odd key: x': 'yes',
      'frontend.enableUpdateWorkflowExecution': [{ value: true, constraints: {} }],
      no: undefined,
    };
    const text = toYaml(value, ['header', '']);
    expect(text.startsWith('# header\n#\n')).toBe(true);
    const { no: _, ...rest } = value;
    expect(parse(text)).toEqual(rest);
  });

  test('refuses a number YAML cannot hold', () => {
    expect(() => toYaml({ a: Number.NaN })).toThrow(/NaN/);
  });
});
