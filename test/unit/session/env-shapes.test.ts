/**
 * Secret values by their shape (src/session/secret-values.ts `isSecretEnvValue`) and the worker's command-scope
 * git config (src/session/env.ts `isGitConfigEnvName`): the values an attacker would choose to get past the rules,
 * the ordinary values that must still reach bash, and real sessions whose `env` shows neither the secrets nor the
 * worker's git config while the session's own `safe.directory` keeps working.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildSessionEnv, isSecretEnvName, isSecretEnvValue, MIN_REDACTED_SECRET_LENGTH } from '../../../src/session/env';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';
import { personsRepo } from '../attack/persons-repo';

const PEM = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';

/** Real private keys as DER, base64'd with no armor line (PKCS#8 RSA and Ed25519, PKCS#1 RSA, SEC1 EC), and their public keys. */
const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
const ed = generateKeyPairSync('ed25519');
const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const DER_KEYS: readonly string[] = [
  rsa.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  rsa.privateKey.export({ format: 'der', type: 'pkcs1' }).toString('base64'),
  ed.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  ec.privateKey.export({ format: 'der', type: 'sec1' }).toString('base64'),
  `key=${ec.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64url')}`,
];
const DER_PUBLIC: readonly string[] = [
  rsa.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  rsa.publicKey.export({ format: 'der', type: 'pkcs1' }).toString('base64'),
  ed.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  // A certificate's body (openssl), as a CA bundle variable would hold it.
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ed25519', '-nodes', '-keyout', '/dev/null', '-subj', '/CN=x'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l && !l.startsWith('-----'))
    .join(''),
];

/** `n` characters of `alphabet`, the same in every run (a token's random part). */
function fill(n: number, alphabet = 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789'): string {
  let out = '';
  for (let i = 0; i < n; i++) out += alphabet[(i * 7 + 3) % alphabet.length];
  return out;
}
const HEX = '0123456789abcdef';
const AZURE_KEY = Buffer.from(fill(64)).toString('base64');

/**
 * Round 32 (F3): secrets as vendors' docs and common `.env` files spell them, which passed every rule, and the variants
 * an attacker would try on each new rule (case, spaces, JSON, inside a longer value, percent- and base64-encoded).
 */
const ROUND32_SECRETS: readonly string[] = [
  // Azure connection strings: storage (AccountKey), Service Bus and Event Hubs (SharedAccessKey), a SAS in one.
  `DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey=${AZURE_KEY};EndpointSuffix=core.windows.net`,
  `AccountName=acmeprod;accountkey = ${AZURE_KEY}`,
  `{"storage": {"AccountKey": "${AZURE_KEY}"}}`,
  `Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${AZURE_KEY}`,
  `AccountEndpoint=https://acme.documents.azure.com:443/;AccountKey=${AZURE_KEY};`,
  `BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&sig=${fill(20)}`,
  Buffer.from(`DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${AZURE_KEY}`).toString('base64'),
  // Signed URLs: Azure SAS, S3 and GCS presigned, CloudFront; %-encoded, upper case, HTML-escaped `&amp;`.
  `https://acme.blob.core.windows.net/backups?sv=2022-11-02&sp=rwdlac&sig=Xy7%2BabcDEF0123ghiJKLmno456PQRstu789VWXyz%3D`,
  `https://acme.blob.core.windows.net/b?sv=2022-11-02&SIG=${fill(30)}`,
  `https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=${fill(64, HEX)}`,
  `https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=${fill(64, HEX)}`,
  `https://d111.cloudfront.net/x.mp4?Expires=1767225600&Signature=${fill(40)}~&Key-Pair-Id=K2JCJMDEHXQW5F`,
  `<a href="https://a.blob.core.windows.net/c?sv=1&amp;sig=${fill(30)}">`,
  encodeURIComponent(`https://a.blob.core.windows.net/c?sv=1&sig=${fill(30)}`),
  // Webhook URLs whose path is the secret, also without a scheme, upper case, inside a command.
  'https://hooks.slack.com/services/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',
  'HTTPS://HOOKS.SLACK.COM/services/T0A1B2C3D/B4E5F6G7H/q1w2e3r4t5y6u7i8o9p0a1s2',
  'hooks.slack.com/workflows/T0A1B2C3D/A05ABCDEF/123456789/q1w2e3r4t5y6',
  `curl -X POST -d @msg.json https://hooks.slack.com/triggers/T0A1B2C3D/12345/${fill(32, HEX)}`,
  `https://discord.com/api/webhooks/1133557799/${fill(68)}`,
  `https://canary.discordapp.com/api/v10/webhooks/1133557799/${fill(68)}`,
  `https://acme.webhook.office.com/webhookb2/${fill(8, HEX)}-1234-5678-9abc-${fill(12, HEX)}@x/IncomingWebhook/${fill(32, HEX)}/y`,
  `https://hooks.zapier.com/hooks/catch/123456/${fill(7, 'abcdefghjk')}/`,
  `https://maker.ifttt.com/trigger/deploy/with/key/${fill(22)}`,
  `https://api.telegram.org/bot123456789:AA${fill(33)}/sendMessage`,
  // Token formats, under no telling name, alone and inside a longer value.
  `hvs.CAESIJ1a2b3c4d5e6f7g8h9i0jklmnopqrstuvwxyzABCDEFGH`,
  `vault login hvb.${fill(90)}`,
  `hvr.${fill(24)}`,
  `hf_${fill(34, 'aBcDeFgHiJkLmNoPqRsTuVwXyZ')}`,
  `HUB=hf_${fill(34)}`,
  `pypi-AgEIcHlwaS5vcmcCJD${fill(60)}`,
  `gldt-${fill(20)}`,
  `glrt-${fill(20)}`,
  `glptt-${fill(40, HEX)}`,
  `GR1348941${fill(20)}`,
  `xoxe.xoxp-1-${fill(40)}`,
  `xoxe-1-${fill(40)}`,
  `xapp-1-A0123456789-${fill(40)}`,
  `ABIA${fill(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}`,
  `SK${fill(32, HEX)}`,
  `SG.${fill(22)}.${fill(43)}`,
  `shpat_${fill(32, HEX)}`,
  `shpss_${fill(32, HEX)}`,
  `dop_v1_${fill(64, HEX)}`,
  `doo_v1_${fill(64, HEX)}`,
  `dp.st.dev.${fill(40)}`,
  `dp.pt.${fill(43)}`,
  `whsec_${fill(32)}`,
  `GOCSPX-${fill(28)}`,
  `ya29.a0Af${fill(60)}`,
  `dckr_pat_${fill(27)}`,
  `glsa_${fill(32)}_${fill(8, HEX)}`,
  `sntrys_eyJ${fill(60)}`,
  `tskey-auth-k${fill(16)}-${fill(30)}`,
  `ATATT3xFfGF0${fill(40)}`,
  `lin_api_${fill(40)}`,
  `PMAK-${fill(24, HEX)}-${fill(34, HEX)}`,
  `dapi${fill(32, HEX)}`,
  `sbp_${fill(40, HEX)}`,
  `pul-${fill(40, HEX)}`,
  `${fill(14)}.atlasv1.${fill(67)}`,
  `gsk_${fill(52)}`,
  `r8_${fill(37)}`,
  `xai-${fill(80)}`,
  `key-${fill(32, HEX)}`,
  `${fill(32, HEX)}-us21`,
  `NRAK-${fill(27, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')}`,
  `sq0atp-${fill(22)}`,
  `pscale_tkn_${fill(43)}`,
  `ops_eyJ${fill(60)}`,
  `figd_${fill(40)}`,
  `bkua_${fill(40, HEX)}`,
  `CCIPAT_${fill(22)}_${fill(40, HEX)}`,
  `fo1_${fill(43)}`,
  `ntn_${fill(46)}`,
  `AKCp${fill(69)}`,
  `cmVmdGtuOjAxOjE3${fill(50)}`,
  `{"passphrase": "correct horse battery staple"}`,
  'gpg --batch --passphrase=correct-horse',
];

/** Round 32: ordinary values beside the new rules, which must still reach bash. */
const ROUND32_ORDINARY: readonly string[] = [
  '/tmp/ssh-XXXXk3Jd9a/agent.1234',
  '/run/user/1000/keyring/ssh',
  '/run/user/1000/gnupg/S.gpg-agent.ssh',
  'https://hooks.slack.com/',
  'https://hooks.slack.com/services/',
  'https://discord.com/channels/1133557799/2244668800',
  'https://discord.com/api/webhooks/',
  'https://github.com/o/r?tab=readme-ov-file#install',
  'https://example.com/search?q=signature&page=2',
  'https://example.com/?sig=short',
  'https://docs.aws.amazon.com/AmazonS3/latest/userguide/ShareObjectPreSignedURL.html',
  'DefaultEndpointsProtocol=https;AccountName=acmeprod;EndpointSuffix=core.windows.net',
  'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey',
  'UseDevelopmentStorage=true',
  'Server=db;Database=app;Trusted_Connection=True;',
  '/home/u/.local/bin:/home/u/sig/bin:/usr/bin',
  'hf_hub_download',
  'huggingface/hf_transfer',
  'hvs.conf',
  'key-value-store',
  'SKIP_TESTS',
  'SG.example.com',
  'dapi',
  'https://api.telegram.org/',
  '/home/alice/work/project',
];

/** A Basic credential's base64 (RFC 7617: `user-id:password`). */
const basic = (userPass: string): string => Buffer.from(userPass).toString('base64');
const VAULT_24 = 'OZZFOsivUeOMeDyFtRz7cOmE';

/**
 * Vault's legacy tokens (`s.`/`r.` + 24 base62, `b.` + the base64url of an encrypted entry), Heroku API keys and a bare
 * `Basic <base64 of user:password>`, which passed every rule: alone, in a command, in JSON, percent- and base64-wrapped.
 */
const LEGACY_AND_BASIC_SECRETS: readonly string[] = [
  `s.${VAULT_24}`,
  `VT=s.${VAULT_24}`,
  `vault login s.${VAULT_24}`,
  `{"id":"s.${fill(24)}"}`,
  `s.${VAULT_24}.6wW4W`,
  `r.${fill(24, 'abcdefghijklmnopqrstuvwxyz0123456789')}`,
  `b.AAAAAQ${fill(120, 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-')}`,
  `HRKU-AA${fill(58, 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-')}`,
  `heroku config HRKU-AA${fill(58)} --app x`,
  `HRKU-${fill(8, HEX)}-${fill(4, HEX)}-${fill(4, HEX)}-${fill(4, HEX)}-${fill(12, HEX)}`,
  `Basic ${basic('alice:hunter2')}`,
  `basic ${basic(':cf0e05d9-4eca-4948-a012-b91fe9704bab')}`,
  `BASIC   ${basic('sk_live_key:')}`,
  `--header=Basic ${basic('ci-bot:pa:ss word')}`,
  `{"h": "Basic ${basic('alice:hunter2')}"}`,
  `Basic ${Buffer.from('alice:hunter2').toString('base64url')}`,
  encodeURIComponent(`Basic ${basic('alice:hunter2')}`),
  Buffer.from(`Basic ${basic('alice:hunter2')}`).toString('base64'),
];

/** Beside the rules above: `s.` in prose or a path, short or all-lower-case `s.` words, a ticket id, `basic` in prose. */
const LEGACY_AND_BASIC_ORDINARY: readonly string[] = [
  'It works. s. See the docs.',
  'items.s.OZZFOsivUeOMeDyFtRz7cOmE',
  'my-s.OZZFOsivUeOMeDyFtRz7cOmE',
  's.abcdefghijklmnopqrstuvwx',
  `s.${VAULT_24.slice(1)}`,
  `s.${VAULT_24}x`,
  'r.example.com',
  'b.AAAA',
  'HRKU-1234',
  `HRKU-AA${fill(20)}`,
  `Basic ${basic('Hello world')}`,
  `basic ${basic('no colon in this text')}`,
  'basic usage',
  'Basic English',
  'Basic auth is enabled',
  '--auth-type basic --user alice',
  `basic ${Buffer.from([0x3a, 0xff, 0xfe, 0x01]).toString('base64')}`,
  basic('alice:hunter2').slice(0, 4),
];

/** Secrets in the shapes round 29 found passing, and the variants chosen to get past each new rule. */
const SECRET_SHAPES: readonly string[] = [
  // A scheme-less proxy: at the start, after `=` in an option, in JSON, with a `%40`-encoded and a raw `@`.
  'alice:S3cretPw@proxy.corp:3128',
  '  alice:S3cretPw@proxy.corp:3128  ',
  '--proxy=alice:S3cretPw@proxy.corp:3128',
  '{"proxy":"alice:S3cretPw@proxy.corp"}',
  'alice:p%40ss@proxy.corp:3128',
  'alice:p@ss@proxy.corp:3128',
  // A token as a URL's user alone: well-known, classic 40-hex, UUID, percent-encoded, uppercase scheme.
  'https://ghp_AbCdEf0123456789AbCdEf0123456789AbCd@github.com/o/r.git',
  'https://0123456789abcdef0123456789abcdef01234567@github.com/o/r.git',
  'HTTPS://8f14e45f-ceea-467f-a0c8-3b1c2d4e5f60@dev.azure.com/o/_git/r',
  'https://%67lpat-AbCdEfGhIjKlMnOpQrSt@gitlab.com/o/r.git',
  'git clone https://ghp_AbCdEf0123456789AbCdEf0123456789AbCd@github.com/o/r.git dir',
  // Private keys: PGP armor, PuTTY, SSH2, lower case, escaped line breaks, age.
  '-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----',
  'PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\nAAAA',
  'putty-user-key-file-2 : ssh-rsa',
  '---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----',
  '-----begin rsa private key-----',
  '-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEA\\n-----END RSA PRIVATE KEY-----',
  '{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\\nMIIE\\n"}',
  'AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQS',
  // Headers and .netrc text, any case, anywhere in the value.
  'Authorization: Bearer ghp_AbCdEf0123456789AbCdEf0123456789AbCd',
  "'http.extraheader'='AUTHORIZATION: basic eDp0b2tlbg=='",
  'aUtHoRiZaTiOn:token abc',
  '-H "Proxy-Authorization: Basic eDp0b2tlbg=="',
  'PRIVATE-TOKEN: abc',
  'curl -H x-api-key:abc https://api',
  'Bearer abcdefghijklmnopqrstuvwxyz',
  'machine github.com\n  login x\n  password y',
  'default login anonymous password me@example.com',
  // URL passwords with / # ? a space and an unencoded @; a URL inside a longer value.
  'postgresql://app:Ab/cd+Ef==@db/app',
  'postgresql://app:pa#ss@db/app',
  'postgresql://app:pa?ss@db/app',
  'postgresql://app:pass word@db/app',
  'amqp://guest:Zm9v/YmFy@rabbit:5672/',
  'postgres://u:p@ss@db/app',
  '--proxy=http://u:pw@h',
  'JAVA_OPTS=-Dx=1 -Ddb=jdbc:postgresql://app:pw@db:5432/app',
  '{"db":{"url":"mysql://root:hunter2@10.0.0.5/prod"}}',
  '-Dproxy=http://proxy:3128 -Ddb=postgres://app:pw@db/app',
  'http://localhost:4873/@scope/pkg https://u:pw@registry.example/',
  'mailto:ops@example.com alice:S3cretPw@proxy.corp:3128',
  'sip:alice:S3cretPw@sip.example.com',
  'https%3A%2F%2Fu%3Apw%40host%2Fx',
  // Key/value pairs naming a secret: JSON, ADO.NET, libpq, npm, Docker.
  '{"password":"hunter2"}',
  '"{\\"password\\":\\"hunter2\\"}"',
  'db:\n  password: hunter2',
  '<settings><password>hunter2</password></settings>',
  '{\\"auths\\":{\\"r.io\\":{\\"auth\\":\\"dXNlcjpwYXNzd29yZA==\\"}}}',
  '{ "Client_Secret" : "abc" }',
  'Server=db;Database=app;User Id=sa;Password=Secr3t;',
  'Server=db;Uid=sa;Pwd=Secr3t;',
  'host=db user=app password=secret dbname=app',
  '//registry.npmjs.org/:_authToken=abc123',
  '_auth=dXNlcjpwYXNz',
  '{"auths":{"r.io":{"auth":"dXNlcjpwYXNzd29yZA=="}}}',
  // Well-known token formats, alone and inside a longer value.
  'ghp_AbCdEf0123456789AbCdEf0123456789AbCd',
  'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz',
  'token glpat-AbCdEfGhIjKlMnOpQrSt',
  'xoxb-1234567890-abcdefghij',
  'npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
  'AKIAIOSFODNN7EXAMPLE',
  'key=AIzaSyA-1234567890abcdefghijklmnopqrstu',
  'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv',
  'sk-proj-AbCdEfGhIjKlMnOpQrStUv',
  'sk_live_1234567890abcdef',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc',
  // Base64-wrapped: a PEM (aligned, after a prefix, with leading whitespace inside), a URL, a header.
  Buffer.from(PEM).toString('base64'),
  `key=${Buffer.from(PEM).toString('base64')}`,
  `x${Buffer.from(`  ${PEM}`).toString('base64')}`,
  Buffer.from('postgres://app:pw@db/app').toString('base64'),
  Buffer.from('Authorization: Bearer abcdefgh').toString('base64url'),
  ...DER_KEYS,
  // Hosts: IPv6, non-ASCII.
  'postgres://app:pw@[::1]:5432/app',
  'postgres://app:pw@dé.example/app',
  ...ROUND32_SECRETS,
  ...LEGACY_AND_BASIC_SECRETS,
];

/** Ordinary values that must still reach bash. */
const ORDINARY: readonly string[] = [
  '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  '/opt/homebrew/opt/node@18/bin:/usr/bin',
  'bin:/opt/homebrew/opt/node@18/bin:/usr/bin',
  'rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:or=40;31;01:ex=01;32:*.tar=01;31',
  'https://example.com/x',
  'https://user@host/x',
  'https://first.last@host/x',
  'https://alice%40corp.com@host/x',
  'ssh://git@github.com/o/r.git',
  'git+ssh://git@github.com/o/r.git',
  'git@github.com:owner/repo.git',
  'alice@example.com',
  'Alice Example <alice@example.com>',
  'mailto:alice@example.com',
  'npm:string-width@4.2.0',
  'node:18@sha256:0123abcd',
  'http://proxy:3128',
  'http://localhost:4873/@scope/pkg',
  'http://host/a:b@c',
  '-Dhttp.proxy=http://proxy:3128 -Dmail=ops@example.com',
  '--password-file=/run/pw',
  '{"password": ""}',
  '<password></password>',
  'PGPASSFILE=/run/pgpass token_url=https://auth.example/oauth',
  'task-abcdefghijklmnopqrstuvwxyz',
  'the bearer token goes here',
  'sk-1',
  '0123456789abcdef0123456789abcdef01234567',
  '-----BEGIN CERTIFICATE-----',
  '-----BEGIN PUBLIC KEY-----',
  'safe.directory',
  'http.extraheader',
  'C.UTF-8',
  ...DER_PUBLIC,
  ...ROUND32_ORDINARY,
  ...LEGACY_AND_BASIC_ORDINARY,
];

describe('secret value shapes (pure)', () => {
  test.each(SECRET_SHAPES.map((v) => [v]))('secret: %j', (value) => {
    expect(isSecretEnvValue(value)).toBe(true);
    const built = buildSessionEnv({ base: { PLAIN_NAME: value } });
    expect(built.env.PLAIN_NAME).toBeUndefined();
    expect(built.removed).toEqual(['PLAIN_NAME']);
  });

  test.each(ORDINARY.map((v) => [v]))('ordinary: %j', (value) => {
    expect(isSecretEnvValue(value)).toBe(false);
    expect(buildSessionEnv({ base: { PLAIN_NAME: value } }).env.PLAIN_NAME).toBe(value);
  });

  test('the DER keys and certificate above are real ones', () => {
    for (const v of [...DER_KEYS, ...DER_PUBLIC]) expect(v.length).toBeGreaterThan(40);
  });

  test('a secret by shape shorter than MIN_REDACTED_SECRET_LENGTH is removed but not redacted', () => {
    const short = 'a:b@h:1';
    expect(short.length).toBeLessThan(MIN_REDACTED_SECRET_LENGTH);
    const built = buildSessionEnv({ base: { http_proxy: short } });
    expect(built.env.http_proxy).toBeUndefined();
    expect(built.removed).toEqual(['http_proxy']);
    expect(built.secrets).toEqual([]);
  });

  test("the worker's git env config is removed as a whole; only its secret values are redacted; the session's own entries stay", () => {
    const header = 'Authorization: Bearer ghp_AbCdEf0123456789AbCdEf0123456789AbCd';
    const params = "'http.extraheader'='AUTHORIZATION: basic eDp0b2tlbg=='";
    const built = buildSessionEnv({
      base: {
        GIT_CONFIG_COUNT: '2',
        GIT_CONFIG_KEY_0: 'core.askPass',
        GIT_CONFIG_VALUE_0: '/usr/local/bin/worker-askpass',
        GIT_CONFIG_KEY_1: 'http.extraheader',
        GIT_CONFIG_VALUE_1: header,
        GIT_CONFIG_PARAMETERS: params,
        GIT_CONFIG_NOSYSTEM: '1',
      },
      extra: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.directory', GIT_CONFIG_VALUE_0: '/srv/ws' },
    });
    expect(Object.entries(built.env).filter(([k]) => k.startsWith('GIT_CONFIG'))).toEqual([
      ['GIT_CONFIG_NOSYSTEM', '1'],
      ['GIT_CONFIG_COUNT', '1'],
      ['GIT_CONFIG_KEY_0', 'safe.directory'],
      ['GIT_CONFIG_VALUE_0', '/srv/ws'],
    ]);
    expect(built.removed).toEqual([
      'GIT_CONFIG_COUNT',
      'GIT_CONFIG_KEY_0',
      'GIT_CONFIG_KEY_1',
      'GIT_CONFIG_PARAMETERS',
      'GIT_CONFIG_VALUE_0',
      'GIT_CONFIG_VALUE_1',
    ]);
    // `http.extraheader` (the key, which the name rule `_KEY_` matches) is not made a secret to redact.
    expect(built.secrets.map((s) => s.name).sort()).toEqual(['GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_VALUE_1']);
    // A name the operator lists is a secret whatever its value.
    const listed = buildSessionEnv({ base: { GIT_CONFIG_VALUE_3: 'plainvalue' }, secretEnvNames: ['GIT_CONFIG_VALUE_3'] });
    expect(listed.secrets).toEqual([{ name: 'GIT_CONFIG_VALUE_3', value: 'plainvalue' }]);
  });
});

/** Round 32 (F3): names of passwords and secrets no name rule matched, and the names beside them that must stay. */
const ROUND32_SECRET_NAMES: readonly string[] = [
  'MYSQL_PWD',
  'DB_PWD',
  'DBPWD',
  'PWD_DB',
  'DB_PASS',
  'SMTP_PASS',
  'REDIS_PASS',
  'REDISPASS',
  'PASS',
  'db_pass',
  'MAIL_PASS_PROD',
  'GPG_PASSPHRASE',
  'SSH_KEY_PASSPHRASE',
  'OTP_PASSCODE',
  'SLACK_WEBHOOK_URL',
  'DISCORD_WEBHOOK',
  'TEAMS_WEBHOOK_URL',
  'AZURE_STORAGE_CONNECTION_STRING',
  'SERVICEBUS_CONNECTIONSTRING',
];
const ROUND32_ORDINARY_NAMES: readonly string[] = [
  'PWD',
  'OLDPWD',
  'INIT_CWD',
  'PGPASSFILE',
  'PASSENGER_APP_ENV',
  'BYPASS',
  'NO_PROXY_BYPASS',
  'COMPASS_HOME',
  'PATH',
  'HOME',
  'SHELL',
];

describe('round 32: secret names and the cost of the value rules (pure)', () => {
  test.each(ROUND32_SECRET_NAMES.map((n) => [n]))('secret name: %s', (name) => {
    expect(isSecretEnvName(name)).toBe(true);
    const built = buildSessionEnv({ base: { [name]: 'plain-value-1' } });
    expect(built.env[name]).toBeUndefined();
    expect(built.secrets).toEqual([{ name, value: 'plain-value-1' }]);
  });

  test.each(ROUND32_ORDINARY_NAMES.map((n) => [n]))('ordinary name: %s', (name) => {
    expect(isSecretEnvName(name)).toBe(false);
    expect(buildSessionEnv({ base: { [name]: '/home/alice/work' } }).env[name]).toBe('/home/alice/work');
  });

  test('a large value costs linear time: 1 MB of each hard case, median of 5 runs', () => {
    const MB = 1_000_000;
    const cases: Record<string, string> = {
      letters: 'a'.repeat(MB),
      base64: Buffer.from(fill(750_000)).toString('base64').slice(0, MB),
      // Near misses of the new rules, repeated: each starts a match that fails late.
      'near tokens': 'hvs.short hf_short SG.x.y sig=abc key-xyz dp.st. pypi-Ag '.repeat(MB / 57),
      'near webhooks': 'https://hooks.slack.com/services/ https://discord.com/api/webhooks/x '.repeat(MB / 70),
      'near keys': ';AccountKey=;SharedAccessKey=;passphrase= '.repeat(MB / 44),
      digits: '1234567890:'.repeat(MB / 11),
      // Near misses of the Vault legacy, Heroku and Basic rules: each `s.`/`Basic` starts a match that fails late.
      'near legacy': `s.${'A'.repeat(23)}. Basic SGVsbG8= HRKU-AA1 b.AAAA `.repeat(MB / 58),
      // Under 24 characters, so that the base64 runs' decodings (`decodedForms`) do not dominate the figure.
      'basic runs': `basic ${'QUFB'.repeat(5)} `.repeat(MB / 27),
    };
    const medians: Record<string, number> = {};
    for (const [name, value] of Object.entries(cases)) {
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const started = process.hrtime.bigint();
        isSecretEnvValue(value);
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      medians[name] = times.sort((a, b) => a - b)[2]!;
    }
    // Printed for the record (docs/security.md quotes them with the load average); the bound is far above them.
    console.log(`isSecretEnvValue on 1 MB, median ms: ${JSON.stringify(medians)}`);
    for (const ms of Object.values(medians)) expect(ms).toBeLessThan(5_000);
  });
});

describe('real sessions: the worker environment a session gets', () => {
  /** Variables set in this process (the worker's environment a session starts from) for one test, then restored. */
  const saved = new Map<string, string | undefined>();
  function workerEnv(vars: Record<string, string>): void {
    for (const [k, v] of Object.entries(vars)) {
      if (!saved.has(k)) saved.set(k, process.env[k]);
      process.env[k] = v;
    }
  }
  afterEach(async () => {
    await closeSessions();
    removeTempDirs();
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    saved.clear();
  });

  test('no secret shape reaches `env` in bash, under an innocent name; each is redacted when printed', async () => {
    const vars = Object.fromEntries(SECRET_SHAPES.map((v, i) => [`SHAPE_${i}`, v]));
    workerEnv({ ...vars, http_proxy: 'alice:S3cretPw@proxy.corp:3128' });
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'leak.txt'), 'alice:S3cretPw@proxy.corp:3128\n');
    const s = await startSession({ cwd: dir });
    const r = await s.run('env; echo ---; cat leak.txt');
    expect(r.output).not.toMatch(/^(SHAPE_\d+|http_proxy)=/m);
    for (const v of SECRET_SHAPES) if (!v.includes('\n')) expect(r.output).not.toContain(v.trim());
    expect(r.output).toContain('---\n[REDACTED:');
  });

  test("round 32: a password under PASS/PWD/PASSPHRASE names and a webhook or connection string do not reach `env`; PWD is the shell's", async () => {
    const values = Object.fromEntries(ROUND32_SECRET_NAMES.map((n, i) => [n, `value-of-${i}-xyz`]));
    workerEnv({ ...values, OLDPWD: '/home/alice/previous' });
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    const r = await s.run('env; echo "---$PWD"');
    for (const name of ROUND32_SECRET_NAMES) expect(r.output).not.toMatch(new RegExp(`^${name}=`, 'm'));
    expect(r.output).not.toMatch(/value-of-\d+-xyz/);
    expect(r.output).toMatch(/^PWD=\//m);
    expect(r.output).toContain(`---${fs.realpathSync(dir)}`);
  });

  test('ordinary values reach `env` in bash unchanged', async () => {
    const vars = Object.fromEntries(ORDINARY.map((v, i) => [`ORDINARY_${i}`, v]));
    workerEnv(vars);
    const s = await startSession({ cwd: tempDir() });
    const r = await s.run('for i in $(seq 0 ' + (ORDINARY.length - 1) + '); do n=ORDINARY_$i; printf "%s\\n" "${!n}"; done');
    expect(r.output).toBe(ORDINARY.map((v) => `${v}\n`).join(''));
  });

  test("the worker's git env config (an Authorization header) reaches neither `env` nor the session's git; safe.directory still works", async () => {
    workerEnv({
      GIT_CONFIG_COUNT: '2',
      GIT_CONFIG_KEY_0: 'core.askPass',
      GIT_CONFIG_VALUE_0: '/usr/local/bin/worker-askpass',
      GIT_CONFIG_KEY_1: 'http.extraheader',
      GIT_CONFIG_VALUE_1: 'Authorization: Bearer ghp_AbCdEf0123456789AbCdEf0123456789AbCd',
      GIT_CONFIG_PARAMETERS: "'http.extraheader'='AUTHORIZATION: basic eDp0b2tlbg=='",
    });
    const { ws } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      'env | grep ^GIT_CONFIG | sort; echo ---; git config --get-all http.extraheader; echo "get $?"; git status --short; echo "status $?"; echo http.extraheader',
    );
    expect(r.output).not.toMatch(
      /ghp_|eDp0b2tlbg|worker-askpass|http\.extraheader=|GIT_CONFIG_PARAMETERS|GIT_CONFIG_KEY_1|GIT_CONFIG_VALUE_1/,
    );
    expect(r.output).toContain('get 1\n');
    expect(r.output).toContain('status 0\n');
    // The key is not redacted from output (it is no secret).
    expect(r.output.endsWith('http.extraheader\n')).toBe(true);
    if (process.getuid?.() === 0) expect(r.output).toMatch(/^GIT_CONFIG_COUNT=\d+\nGIT_CONFIG_KEY_0=safe\.directory\nGIT_CONFIG_VALUE_0=/);
  });
});
