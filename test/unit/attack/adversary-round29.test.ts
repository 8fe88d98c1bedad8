/**
 * Adversary round 29 (a short round at the end of the session of 2026-12-07, on main 52b1929; not yet landed when
 * written): the findings are in the skipped tests below, each failing un-skipped as the round observed it (load under
 * 3). Kind 1-of-secrets (a secret reaching bash): values `isSecretEnvValue` (src/session/env.ts) passes: a
 * scheme-less proxy with user:password, a token as a URL's user, PGP and PuTTY private keys, an Authorization header
 * in GIT_CONFIG_VALUE_n or GIT_CONFIG_PARAMETERS, a URL password holding `/ # ?` or a space, a base64-wrapped PEM key.
 * Fixed for the kind (OPEN_VALUE_SHAPES false): src/session/secret-values.ts `isSecretEnvValue`, and env.ts removes the
 * worker's command-scope git config as a whole; the attacker's variants and real sessions are in
 * test/unit/session/env-shapes.test.ts.
 * Kind 5: a NEW pack whose index names an object of HEAD with other bytes (git reads packs first and never re-hashes):
 * the person's checkout writes the session's run.sh, nothing named, at the root and in a nested clone; a fix for
 * round 28's swapped loose object (objects present at start unchanged) would not see it. Fix for the kind: verify
 * every object a new pack or alternates line gives for a path of HEAD (or refuse new packs' ids that HEAD's trees
 * name), and name new `objects/info/alternates` lines.
 * Tried, held: gitRefusesPath against git 2.39.5 (~1,150 names; never lets through what git refuses); stat trust
 * compares all ten fields.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildSessionEnv, isSecretEnvValue } from '../../../src/session/env';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { personsGit, withNested } from './persons-repo';

const OPEN_VALUE_SHAPES = false;
const OPEN_SHADOW_PACK = false;
const itOpen = OPEN_VALUE_SHAPES ? it.skip : it;

afterEach(closeSessions);
afterAll(removeTempDirs);

const gitIn = personsGit;

describe('round 29: secret value shapes isSecretEnvValue must catch', () => {
  itOpen('F1 a scheme-less proxy with user:password', () => {
    const v = 'alice:S3cretPw@proxy.corp:3128';
    expect(isSecretEnvValue(v)).toBe(true);
    const e = buildSessionEnv({ base: { http_proxy: v } });
    expect(e.env.http_proxy).toBeUndefined();
    expect(e.secrets.map((s) => s.value)).toContain(v);
  });
  itOpen('F2 a token as the URL user with no colon', () => {
    expect(isSecretEnvValue('https://ghp_AbCdEf0123456789AbCdEf0123456789AbCd@github.com/o/r.git')).toBe(true);
  });
  itOpen('F3 an OpenPGP armored private key, a PuTTY key', () => {
    expect(isSecretEnvValue('-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----')).toBe(true);
    expect(isSecretEnvValue('PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\nAAAA')).toBe(true);
  });
  itOpen('F4 an Authorization header in GIT_CONFIG_VALUE_n', () => {
    const v = 'Authorization: Bearer ghp_AbCdEf0123456789AbCdEf0123456789AbCd';
    const e = buildSessionEnv({
      base: {
        GIT_CONFIG_COUNT: '2',
        GIT_CONFIG_KEY_1: 'http.extraheader',
        GIT_CONFIG_VALUE_1: v,
        GIT_CONFIG_PARAMETERS: "'http.extraheader'='AUTHORIZATION: basic eDp0b2tlbg=='",
      },
    });
    expect(e.env.GIT_CONFIG_VALUE_1).toBeUndefined();
    expect(e.env.GIT_CONFIG_PARAMETERS).toBeUndefined();
  });
  itOpen('F5 a URL password with / # ? or a space', () => {
    for (const v of [
      'postgresql://app:Ab/cd+Ef==@db/app',
      'postgresql://app:pa#ss@db/app',
      'postgresql://app:pa?ss@db/app',
      'postgresql://app:pass word@db/app',
      'amqp://guest:Zm9v/YmFy@rabbit:5672/',
    ])
      expect(isSecretEnvValue(v)).toBe(true);
  });
  itOpen('F6 a base64-encoded PEM private key', () => {
    const pem = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';
    expect(isSecretEnvValue(Buffer.from(pem).toString('base64'))).toBe(true);
  });
});

/** Shell text: in the repository at the current folder, a new pack whose idx names HEAD:run.sh but holds `echo PWNED-by-session`. */
const SHADOW_PACK = [
  `o=$(git rev-parse HEAD:run.sh) && e=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && d=.git/objects/pk && mkdir -p $d`,
  `h=$(echo "$e" | git pack-objects $d/x)`,
  `python3 -c 'import sys,struct;i=bytearray(open(sys.argv[1],"rb").read());t=bytes.fromhex(sys.argv[2]);i[1032:1052]=t;` +
    `[struct.pack_into(">I",i,8+4*k,1 if k>=t[0] else 0) for k in range(256)];open(sys.argv[3],"wb").write(i)' ` +
    `$d/x-$h.idx "$o" .git/objects/pack/pack-$h.idx`,
  `cp $d/x-$h.pack .git/objects/pack/pack-$h.pack && rm -rf $d .git/objects/\${e:0:2}/\${e:2}`,
  `git show HEAD:run.sh && echo made-it`,
].join(' && ');

describe('kind 5: a new pack whose index names an object of HEAD with other bytes', () => {
  const t = OPEN_SHADOW_PACK ? test.skip : test;
  for (const where of ['vendor/lib', '.'] as const)
    t(
      `in ${where === '.' ? "the workspace's root" : 'the nested clone vendor/lib'}: the person's checkout writes the reviewed run.sh, or the pack is named`,
      async () => {
        if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
        const { ws } = withNested();
        const repo = path.join(ws, where);
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(`cd ${where} && ${SHADOW_PACK}`);
        expect(r.output).toContain('made-it');
        expect(r.output).toContain('PWNED-by-session'); // the session's own git already reads the pack's bytes
        await s.close();
        const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
        const named = /objects\/pack\/|run\.sh/.test(r.output.replace(/made-it|PWNED-by-session|echo /g, '') + atClose);
        fs.rmSync(path.join(repo, 'run.sh'));
        gitIn(repo, 'checkout', '--', 'run.sh');
        expect(named || !fs.readFileSync(path.join(repo, 'run.sh'), 'utf8').includes('PWNED')).toBe(true);
      },
    );
});
