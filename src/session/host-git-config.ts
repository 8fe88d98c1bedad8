/**
 * Where the person's git on the host finds configuration besides the repository's own: the system
 * config and the workspace owner's global configs (git-config(1), "FILES"). The git guard
 * (git-guard.ts) reads them as it reads the repository's config, since the person's git obeys them
 * in the workspace too: a relative `core.hooksPath = .githooks` in `~/.gitconfig` runs the
 * session's `.githooks/pre-commit` at the person's next commit (adversary round 16).
 *
 * Whose home: the workspace owner's (the uid that owns the workspace's root, the person whose git
 * runs there later), from the passwd entry of that uid (`getent passwd`, so NSS users count), not
 * the worker's `$HOME` when the worker runs as another user (root serving a person's workspace has
 * `/root`, whose config the person's git never reads). When the worker runs as the owner, its own
 * `$HOME`, `$XDG_CONFIG_HOME` and `$GIT_CONFIG_GLOBAL` count too (the person's shell most likely
 * set them, as it started the worker). What the person's own shell sets otherwise (another
 * `GIT_CONFIG_GLOBAL`, `GIT_CONFIG_COUNT` entries, `git -c`) the worker cannot know.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { lookupUser } from './identity';

/** The config files the person's git reads besides the repository's, and the homes `~/` means for it. */
export interface HostGitConfig {
  /** The system config: `/etc/gitconfig`, git's compiled-in path when it differs, and the worker's `$GIT_CONFIG_SYSTEM` when set. */
  readonly system: string[];
  /** The owner's global configs: `<home>/.gitconfig` and `<home>/.config/git/config` for each of {@link homes}, `$XDG_CONFIG_HOME/git/config` and `$GIT_CONFIG_GLOBAL` when the worker is the owner. */
  readonly global: string[];
  /** The owner's home directories (absolute): the passwd entry's, and the worker's `$HOME` when the worker is the owner. */
  readonly homes: string[];
}

/**
 * The config files that the git of the owner of uid `ownerUid` reads on the host besides the
 * repository's (see the module comment), whether they exist or not; `env` and `workerUid` are the
 * worker's (defaults: this process's). Paths are absolute, distinct, not resolved. Never throws:
 * an owner with no passwd entry has no home here (then only the worker's, when it is the owner).
 */
export function hostGitConfig(ownerUid: number, env: NodeJS.ProcessEnv = process.env, workerUid = process.getuid?.()): HostGitConfig {
  const same = workerUid === ownerUid;
  const homes = new Set<string>();
  const own = passwdHome(String(ownerUid));
  if (own !== undefined) homes.add(own);
  if (same && env.HOME && path.isAbsolute(env.HOME)) homes.add(path.resolve(env.HOME));
  const global = new Set<string>();
  if (same && env.GIT_CONFIG_GLOBAL && path.isAbsolute(env.GIT_CONFIG_GLOBAL)) global.add(path.resolve(env.GIT_CONFIG_GLOBAL));
  if (same && env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME)) global.add(path.join(env.XDG_CONFIG_HOME, 'git', 'config'));
  for (const home of homes) {
    global.add(path.join(home, '.config', 'git', 'config'));
    global.add(path.join(home, '.gitconfig'));
  }
  const system = new Set<string>(['/etc/gitconfig']);
  const compiled = compiledSystemConfig();
  if (compiled !== undefined) system.add(compiled);
  if (env.GIT_CONFIG_SYSTEM && path.isAbsolute(env.GIT_CONFIG_SYSTEM)) system.add(path.resolve(env.GIT_CONFIG_SYSTEM));
  return { system: [...system], global: [...global], homes: [...homes] };
}

/**
 * The home directory of the passwd entry `who` (a user name or a numeric uid: identity.ts {@link lookupUser}, NSS
 * else `/etc/passwd`); undefined when there is none or it is not absolute. Used for the owner's home and for git's `~user/` in a config value.
 */
export function passwdHome(who: string): string | undefined {
  const home = lookupUser(who)?.home;
  return home && path.isAbsolute(home) ? path.resolve(home) : undefined;
}

/**
 * The system config's path compiled into this git when that file exists (`git config --system
 * --show-origin`, with `GIT_CONFIG_SYSTEM` unset), else undefined. Read with no repository (cwd `/`).
 */
function compiledSystemConfig(): string | undefined {
  try {
    const out = execFileSync('git', ['config', '--system', '--show-origin', '--null', '--name-only', '--list'], {
      cwd: '/',
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', GIT_CEILING_DIRECTORIES: '/' },
    });
    const origin = out.split('\0')[0] ?? '';
    return origin.startsWith('file:') && path.isAbsolute(origin.slice(5)) ? origin.slice(5) : undefined;
  } catch {
    return undefined;
  }
}
