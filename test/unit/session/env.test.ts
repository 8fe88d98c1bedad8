/**
 * Secrets never reach the session's environment, and known secret values
 * are redacted from outputs and the audit log.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildSessionEnv, isSecretEnvName, isSecretEnvValue, redactSecrets } from '../../../src/session';
import { DEFAULT_SESSION_PATH, redactPartialSecretAtEdge, sessionSearchPath } from '../../../src/session/env';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

const SECRETS = {
  ANTHROPIC_API_KEY: 'sk-ant-api03-TESTSECRETVALUE-0123456789',
  ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999/model-server',
  TEMPORAL_ADDRESS: 'temporal.internal.example:7233',
  TEMPORAL_TLS_CLIENT_KEY_DATA: '-----BEGIN KEY----- abcdefgh',
  GITHUB_TOKEN: 'ghp_abcdefghijklmnopqrstuvwxyz012345',
  AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  DB_PASSWORD: 'hunter2hunter2',
  MY_CUSTOM_THING: 'custom-secret-value-42',
  SHORT_TOKEN: 'abc',
  // Secret by value, whatever the name: a URL with a password, a PEM private key.
  DATABASE_URL: 'postgres://app:s3cretpw@db.internal:5432/app',
  DEPLOY_PEM: '-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA',
} as const;

const saved: Record<string, string | undefined> = {};
beforeAll(() => {
  for (const [k, v] of Object.entries(SECRETS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  saved.BASH_ENV = process.env.BASH_ENV;
  process.env.BASH_ENV = '/nonexistent/should-not-be-sourced';
});
afterAll(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});
afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

describe('the session environment', () => {
  test('no ANTHROPIC_*, TEMPORAL_*, token/key/secret/password variables, nor extra secret names', async () => {
    const s = await startSession({ secretEnvNames: ['MY_CUSTOM_THING'] });
    const r = await s.run('env');
    for (const name of Object.keys(SECRETS)) expect(r.output).not.toMatch(new RegExp(`^${name}=`, 'm'));
    expect(r.output).not.toMatch(/^BASH_ENV=/m);
    expect(r.output).toMatch(/^PATH=/m);
    expect(r.output).toMatch(/^HOME=/m);
    expect(
      (await s.run('cat /proc/self/environ | tr "\\0" "\\n" | grep -c -E "^(ANTHROPIC_|TEMPORAL_|GITHUB_TOKEN)" || true')).output,
    ).toBe('0\n');
  });

  test('known secret values are redacted from outputs, even when they leak another way', async () => {
    const dir = tempDir();
    fs.writeFileSync(
      path.join(dir, 'config.ini'),
      `key=${SECRETS.ANTHROPIC_API_KEY}\ntoken=${SECRETS.GITHUB_TOKEN}\ncustom=${SECRETS.MY_CUSTOM_THING}\nshort=${SECRETS.SHORT_TOKEN}\ndb=${SECRETS.DATABASE_URL}\n`,
    );
    const s = await startSession({ cwd: dir, secretEnvNames: ['MY_CUSTOM_THING'] });
    const r = await s.run('cat config.ini');
    expect(r.output).toBe(
      'key=[REDACTED:ANTHROPIC_API_KEY]\ntoken=[REDACTED:GITHUB_TOKEN]\ncustom=[REDACTED:MY_CUSTOM_THING]\nshort=abc\ndb=[REDACTED:DATABASE_URL]\n',
    );
  });

  test('a secret cut in half by the output cap is still redacted', async () => {
    const s = await startSession({ maxOutputBytes: 1000 });
    // The secret straddles the head cut (~500 bytes in).
    const r = await s.run(`printf '%0490d' 0; echo "${SECRETS.GITHUB_TOKEN}"; seq 1 2000`);
    expect(r.truncated).toBe(true);
    expect(r.output).not.toContain(SECRETS.GITHUB_TOKEN.slice(0, 6));
  });

  test('explicit env entries are set over the scrubbed environment; non-interactive defaults can be overridden', async () => {
    const s = await startSession({ env: { MY_VAR: 'v1', PAGER: 'less' } });
    expect((await s.run('echo "$MY_VAR $PAGER $GIT_PAGER"')).output).toBe('v1 less cat\n');
  });
});

describe('buildSessionEnv and redaction (pure)', () => {
  test('secret names', () => {
    for (const name of [
      'ANTHROPIC_API_KEY',
      'anthropic_api_key',
      'TEMPORAL_ADDRESS',
      'GITHUB_TOKEN',
      'NPM_TOKEN',
      'AWS_SECRET_ACCESS_KEY',
      'AWS_ACCESS_KEY_ID',
      'OPENAI_API_KEY',
      'APIKEY',
      'DB_PASSWORD',
      'GOOGLE_APPLICATION_CREDENTIALS',
      'SSH_AUTH_SOCK',
      'SSH_PRIVATE_KEY_PATH',
    ]) {
      expect([name, isSecretEnvName(name)]).toEqual([name, true]);
    }
    for (const name of ['PATH', 'HOME', 'USER', 'LANG', 'TERM', 'PWD', 'NODE_ENV', 'SHELL', 'HOSTNAME', 'KEYTIMEOUT', 'TEMPORARY_DIR']) {
      expect([name, isSecretEnvName(name)]).toEqual([name, false]);
    }
    expect(isSecretEnvName('MY_THING', ['MY_THING'])).toBe(true);
  });

  test('secret values, whatever the name: a URL with a password in its userinfo, a PEM private key', () => {
    for (const value of [
      'postgres://app:pw12345@db/app',
      'redis://:pw12345@cache:6379/0',
      'HTTPS://u:p@proxy.example:3128',
      'jdbc:mysql://root:hunter2@10.0.0.5/prod',
      'amqp://guest:guest@rabbit//',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIE...',
      '-----BEGIN PRIVATE KEY-----',
    ])
      expect([value, isSecretEnvValue(value)]).toEqual([value, true]);
    for (const value of [
      'https://example.com/x',
      'https://user@host/x', // a user name, no password
      'git@github.com:owner/repo.git',
      'http://proxy:3128',
      'http://localhost:8080/@scope/pkg', // an @ in the path
      'http://host/a:b@c', // a colon and an @ after the path starts
      '/usr/local/bin:/usr/bin',
      '-----BEGIN CERTIFICATE-----',
      '-----BEGIN PUBLIC KEY-----',
    ])
      expect([value, isSecretEnvValue(value)]).toEqual([value, false]);
    const built = buildSessionEnv({ base: { PATH: '/bin', DATABASE_URL: 'postgres://app:pw12345@db/app', SITE: 'https://example.com' } });
    expect(built.env.DATABASE_URL).toBeUndefined();
    expect(built.env.SITE).toBe('https://example.com');
    expect(built.secrets).toEqual([{ name: 'DATABASE_URL', value: 'postgres://app:pw12345@db/app' }]);
  });

  test('builds env, removed names and secrets (long values only, longest first)', () => {
    const built = buildSessionEnv({
      base: {
        PATH: '/bin',
        ANTHROPIC_API_KEY: 'sk-123456789',
        GITHUB_TOKEN: 'short',
        BASH_ENV: '/x',
        BASH_FUNC_foo: '() { :; }',
        X_SECRET: 'sk-1234567890123',
      },
      extra: { EXTRA: '1' },
    });
    expect(built.env).toMatchObject({
      PATH: '/bin',
      EXTRA: '1',
      PAGER: 'cat',
      GIT_TERMINAL_PROMPT: '0',
      DEBIAN_FRONTEND: 'noninteractive',
      LANG: 'C.UTF-8',
    });
    expect(Object.keys(built.env)).not.toContain('ANTHROPIC_API_KEY');
    expect(Object.keys(built.env)).not.toContain('BASH_ENV');
    expect(built.removed).toEqual(['ANTHROPIC_API_KEY', 'BASH_ENV', 'BASH_FUNC_foo', 'GITHUB_TOKEN', 'X_SECRET']);
    expect(built.secrets).toEqual([
      { name: 'X_SECRET', value: 'sk-1234567890123' },
      { name: 'ANTHROPIC_API_KEY', value: 'sk-123456789' },
    ]);
  });

  test('redactSecrets and partial redaction at a cut', () => {
    const secrets = [{ name: 'T', value: 'abcdefghijkl' }];
    expect(redactSecrets('x abcdefghijkl y abcdefghijkl', secrets)).toBe('x [REDACTED:T] y [REDACTED:T]');
    expect(redactPartialSecretAtEdge('head abcdefg', secrets, 'end')).toBe('head [REDACTED:T]');
    expect(redactPartialSecretAtEdge('ghijkl tail', secrets, 'start')).toBe('[REDACTED:T] tail');
    expect(redactPartialSecretAtEdge('head abc', secrets, 'end')).toBe('head abc');
  });
});

describe("the session's PATH: only absolute folders the session cannot write", () => {
  const ws = '/srv/repo';
  const writable = [ws, '/tmp', '/var/tmp', '/dev/shm'];
  test.each([
    ['node_modules/.bin:/usr/bin:/bin', '/usr/bin:/bin'],
    [':/usr/bin:/bin', '/usr/bin:/bin'],
    ['/usr/bin::/bin', '/usr/bin:/bin'],
    ['/usr/bin:/bin:', '/usr/bin:/bin'],
    ['.:/usr/bin', '/usr/bin'],
    ['./bin:../x:/usr/bin', '/usr/bin'],
    ['/srv/repo/node_modules/.bin:/usr/bin', '/usr/bin'],
    ['/srv/repo:/usr/bin', '/usr/bin'],
    ['/srv/repo/../repo/bin:/usr/bin', '/usr/bin'],
    ['/srv//repo/bin:/usr/bin', '/usr/bin'],
    ['/tmp/bin:/var/tmp:/dev/shm/x:/usr/bin', '/usr/bin'],
    ['/srv/repository/bin:/usr/local/bin', '/srv/repository/bin:/usr/local/bin'],
    ['/usr/bin/:/bin', '/usr/bin/:/bin'],
  ])('%j becomes %j', (given, kept) => {
    expect(sessionSearchPath(given, writable)).toBe(kept);
  });

  test('nothing kept, or no PATH at all, gives the default search path', () => {
    expect(sessionSearchPath('node_modules/.bin:.:', writable)).toBe(DEFAULT_SESSION_PATH);
    expect(sessionSearchPath(undefined, writable)).toBe(DEFAULT_SESSION_PATH);
    expect(sessionSearchPath('', writable)).toBe(DEFAULT_SESSION_PATH);
  });
});
