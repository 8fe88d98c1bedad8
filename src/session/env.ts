/**
 * The environment a session's bash gets, and the redaction of secret values
 * from what it prints.
 *
 * The worker process holds credentials (the Anthropic API key, Temporal
 * client certificates, cloud tokens). None of them may reach the agent's
 * shell: the model can print its environment, and whatever it sees goes into
 * Temporal history and back to the API. Removing the variables is the main
 * defence; redacting their values from outputs catches the case where a value
 * leaks another way (a config file, `/proc/<worker pid>/environ` as root).
 */

import * as path from 'node:path';
import { isSecretEnvValue } from './secret-values';

export { isSecretEnvValue, SECRET_VALUE_PATTERNS } from './secret-values';

/** A secret value removed from the environment, with the variable it came from. */
export interface SecretValue {
  /** Name of the variable that held the value, e.g. `ANTHROPIC_API_KEY`. */
  name: string;
  /** The value itself (at least {@link MIN_REDACTED_SECRET_LENGTH} characters). */
  value: string;
}

/**
 * Values shorter than this are not redacted: a 3-character "secret" such as
 * `abc` or `true` would turn ordinary output into noise.
 */
export const MIN_REDACTED_SECRET_LENGTH = 8;

/**
 * Variables set in every session so that no program waits for a human: pagers
 * become `cat`, git never prompts for credentials or opens an editor (a
 * commit without `-m` aborts instead of hanging), apt/debconf, pip and npx do
 * not ask, Python does not buffer (so a timed-out command still shows its
 * output so far), and tools avoid colours and cursor movement.
 * Entries in `BashSessionOptions.env` override these.
 */
export const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = Object.freeze({
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  MANPAGER: 'cat',
  SYSTEMD_PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
  GIT_EDITOR: 'true',
  EDITOR: 'true',
  VISUAL: 'true',
  GCM_INTERACTIVE: 'never',
  DEBIAN_FRONTEND: 'noninteractive',
  APT_LISTCHANGES_FRONTEND: 'none',
  PIP_NO_INPUT: '1',
  npm_config_yes: 'true',
  PYTHONUNBUFFERED: '1',
  TERM: 'dumb',
  NO_COLOR: '1',
});

/**
 * Variables removed because they would change how bash itself starts or runs
 * our control code (`BASH_ENV` and `ENV` are sourced by non-interactive
 * shells even with `--norc`; `SHELLOPTS`/`BASHOPTS` turn on options such as
 * `errexit`; exported `BASH_FUNC_*` functions could shadow builtins), or
 * would make a program prompt through a helper (`*_ASKPASS`). They are not
 * secrets, so their values are not redacted.
 */
const SHELL_CONTROL_NAMES = new Set([
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'BASH_XTRACEFD',
  'PROMPT_COMMAND',
  'CDPATH',
  'GLOBIGNORE',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
]);

/**
 * Name rules for secrets, tested on the upper-cased variable name:
 * - every `ANTHROPIC_*`, `TEMPORAL_*` and `AWS_*` variable (API keys, base URLs,
 *   Temporal addresses and TLS material, the claim check's S3 credentials,
 *   profile and endpoint: the agent needs none of them);
 * - names containing TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, PASSCODE,
 *   CREDENTIAL, PRIVATE, WEBHOOK or CONNECTION_STRING (`GITHUB_TOKEN`,
 *   `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`, `GPG_PASSPHRASE`,
 *   `SLACK_WEBHOOK_URL`, `AZURE_STORAGE_CONNECTION_STRING`, ...);
 * - names with a `_`-separated part ending in PASS (`DB_PASS`, `SMTP_PASS`,
 *   `REDISPASS`; not `BYPASS`, `COMPASS`, nor `PGPASSFILE`, a path) or in PWD
 *   (`MYSQL_PWD`, the mysql client's password variable), but for `PWD` and
 *   `OLDPWD`, which bash sets to the working directories;
 * - names with a `_`-separated part ending in KEY or KEYS, or equal to AUTH
 *   (`OPENAI_API_KEY`, `AWS_ACCESS_KEY_ID`, `APIKEY`, `NPM_CONFIG__AUTH`,
 *   `SSH_AUTH_SOCK`, which would hand the agent the worker's SSH keys).
 * False positives (a harmless `MONKEY_MODE`) cost little; a caller that
 * wants such a variable in the session passes it in `env` explicitly.
 */
export const SECRET_NAME_PATTERNS: readonly RegExp[] = Object.freeze([
  /^ANTHROPIC(_|$)/,
  /^TEMPORAL(_|$)/,
  /^AWS(_|$)/,
  /TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|PASSCODE|CREDENTIAL|PRIVATE|WEBHOOK|CONNECTION_?STRING/,
  /(^|_)[A-Z0-9]*(?<!BY|COM)PASS($|_)/,
  /^(?!(OLD)?PWD$).*(^|_)[A-Z0-9]*PWD($|_)/,
  /(^|_)[A-Z0-9]*KEYS?($|_)/,
  /(^|_)AUTH($|_)/,
]);

/**
 * Whether a variable name is treated as secret: it matches
 * {@link SECRET_NAME_PATTERNS} (case-insensitively) or is listed in `extraNames`.
 */
export function isSecretEnvName(name: string, extraNames: Iterable<string> = []): boolean {
  for (const extra of extraNames) if (extra === name) return true;
  const upper = name.toUpperCase();
  return SECRET_NAME_PATTERNS.some((re) => re.test(upper));
}

/**
 * The worker's command-scope git config (git-config(1) ENVIRONMENT): `GIT_CONFIG_COUNT` with its
 * `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` pairs and `GIT_CONFIG_PARAMETERS` (what `git -c` passes on). None of
 * it reaches a session, as a whole: it is the worker's git setup (a CI checkout's `http.extraheader` token lives
 * there), a session's git gets its own `safe.directory` entries through the same variables (setup.ts
 * `identityEnv`), and a partial set would be read wrongly (the worker's `GIT_CONFIG_KEY_1` kept beside the
 * session's `GIT_CONFIG_COUNT=1`). Removed like shell-control names; a value of theirs is redacted only when it
 * is secret by its shape (`isSecretEnvValue`), so that a harmless key such as `http.extraheader`, which the name
 * rule `_KEY_` would match, does not turn into `[REDACTED:...]` in every output.
 */
export function isGitConfigEnvName(name: string): boolean {
  return name === 'GIT_CONFIG_COUNT' || name === 'GIT_CONFIG_PARAMETERS' || /^GIT_CONFIG_(KEY|VALUE)_\d+$/.test(name);
}

/** Input of {@link buildSessionEnv}. */
export interface SessionEnvOptions {
  /** Environment to start from. @default process.env */
  base?: NodeJS.ProcessEnv;
  /**
   * Variables set after scrubbing, over {@link NON_INTERACTIVE_ENV}. They are
   * kept even when their names look secret: the caller chose to pass them.
   */
  extra?: Record<string, string>;
  /** More variable names to remove and whose values to redact. */
  secretEnvNames?: readonly string[];
}

/** Output of {@link buildSessionEnv}. */
export interface SessionEnv {
  /** The environment to give bash. */
  env: Record<string, string>;
  /** Names removed from `base`, sorted (secrets, shell-control variables and the worker's git command-scope config). */
  removed: string[];
  /**
   * Values to redact from outputs: those of the removed secret variables that
   * are at least {@link MIN_REDACTED_SECRET_LENGTH} characters long, longest
   * first (so a secret that contains another is replaced whole).
   */
  secrets: SecretValue[];
}

/**
 * Builds the scrubbed environment of a session: `base` minus secrets (see {@link SECRET_NAME_PATTERNS},
 * `secretEnvNames` and `isSecretEnvValue` in secret-values.ts), shell-control variables and the worker's
 * command-scope git config ({@link isGitConfigEnvName}), plus {@link NON_INTERACTIVE_ENV}, plus `extra`. `LANG`
 * is set to `C.UTF-8` when neither `LANG` nor `LC_ALL` is set, so tools print UTF-8.
 * Pure: reads nothing but its arguments (and `process.env` when `base` is omitted).
 */
export function buildSessionEnv(options: SessionEnvOptions = {}): SessionEnv {
  const base = options.base ?? process.env;
  const extraNames = options.secretEnvNames ?? [];
  const env: Record<string, string> = {};
  const removed: string[] = [];
  const secrets: SecretValue[] = [];
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    if (isGitConfigEnvName(name) && !extraNames.includes(name)) {
      removed.push(name);
      if (isSecretEnvValue(value) && value.length >= MIN_REDACTED_SECRET_LENGTH) secrets.push({ name, value });
      continue;
    }
    if (isSecretEnvName(name, extraNames) || isSecretEnvValue(value)) {
      removed.push(name);
      if (value.length >= MIN_REDACTED_SECRET_LENGTH) secrets.push({ name, value });
      continue;
    }
    if (SHELL_CONTROL_NAMES.has(name) || name.startsWith('BASH_FUNC_')) {
      removed.push(name);
      continue;
    }
    env[name] = value;
  }
  Object.assign(env, NON_INTERACTIVE_ENV);
  if (env.LANG === undefined && env.LC_ALL === undefined) env.LANG = 'C.UTF-8';
  Object.assign(env, options.extra ?? {});
  removed.sort();
  secrets.sort((a, b) => b.value.length - a.value.length);
  return { env, removed, secrets };
}

/** The search path a session gets when none of its worker's `PATH` entries is kept (Debian's default for root). */
export const DEFAULT_SESSION_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The entries of `searchPath` (a `PATH` value, `:`-separated) that name a program by where it is, not by the
 * shell's working directory or a folder the session can write: absolute, normalized, and neither in nor equal to
 * one of `writable` (the workspace, `/tmp`, `/var/tmp`, `/dev/shm`). An empty entry means the working
 * directory to bash (bash(1), `PATH`), as does `.`; a relative one (`node_modules/.bin`, a Dockerfile's `ENV
 * PATH=node_modules/.bin:$PATH`) is looked up from it. With such an entry kept, a file a job writes in the
 * workspace (`node_modules/.bin/git`) would run for the program a person's approval rule names (`git status`).
 * Order and duplicates are kept; when nothing is left, {@link DEFAULT_SESSION_PATH}.
 * Pure. Attack test: test/unit/attack/adversary-round24.test.ts (kind 4, a worker PATH with relative entries).
 */
export function sessionSearchPath(searchPath: string | undefined, writable: readonly string[]): string {
  const under = (dir: string, base: string): boolean => dir === base || dir.startsWith(base.endsWith('/') ? base : `${base}/`);
  const bases = writable.filter((w) => w.startsWith('/')).map((w) => path.posix.normalize(w));
  const kept = (searchPath ?? '')
    .split(':')
    .filter((entry) => entry.startsWith('/'))
    .map((entry) => path.posix.normalize(entry))
    .filter((entry) => !bases.some((base) => under(entry, base)));
  return kept.length > 0 ? kept.join(':') : DEFAULT_SESSION_PATH;
}

/** Shortest secret prefix/suffix that is redacted where output was cut. */
const MIN_PARTIAL_SECRET = 6;

function placeholder(secret: SecretValue): string {
  return `[REDACTED:${secret.name}]`;
}

/**
 * Replaces every occurrence of each secret value in `text` with
 * `[REDACTED:<NAME>]`. Values must come longest first (as
 * {@link buildSessionEnv} returns them). Only literal occurrences are found:
 * a secret printed base64-encoded or split across lines is not.
 */
export function redactSecrets(text: string, secrets: readonly SecretValue[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.value.length < MIN_REDACTED_SECRET_LENGTH) continue;
    if (out.includes(secret.value)) out = out.split(secret.value).join(placeholder(secret));
  }
  return out;
}

/**
 * Redacts a partial secret left at a cut: when `text` ends with the first
 * characters of a secret (at least 6 of them), or starts with its last ones,
 * as happens when output is capped in the middle of a secret.
 * `edge` says which end of `text` is the cut.
 */
export function redactPartialSecretAtEdge(text: string, secrets: readonly SecretValue[], edge: 'end' | 'start'): string {
  for (const secret of secrets) {
    const v = secret.value;
    for (let k = Math.min(v.length - 1, text.length); k >= MIN_PARTIAL_SECRET; k--) {
      if (edge === 'end' && text.endsWith(v.slice(0, k))) return text.slice(0, text.length - k) + placeholder(secret);
      if (edge === 'start' && text.startsWith(v.slice(v.length - k))) return placeholder(secret) + text.slice(k);
    }
  }
  return text;
}
