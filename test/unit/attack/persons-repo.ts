/**
 * The attack tests' person's repository and planted program: a repository of the person (root, on
 * the host) given to a session as its workspace, and the shell text a session uses to plant a
 * program that leaves a marker file when the person's git on the host runs it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../session/helpers';

/**
 * A repository with one commit (`build.sh`) in a new workspace (or in `ws`, an existing empty folder), `git` there as
 * the person (root) on the host, and the path of the marker file a planted program leaves.
 */
export function personsRepo(ws = tempDir()): { ws: string; marker: string; git: (...a: string[]) => string } {
  const git = (...a: string[]): string =>
    execFileSync('git', ['-C', ws, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(ws, 'build.sh'), 'echo building\n');
  git('add', 'build.sh');
  git('commit', '-qm', 'one');
  return { ws, marker: `${ws}-host-marker`, git };
}

/** Shell text for the attacker's program at `file` (a path inside the sandbox's view): it leaves `marker` when it runs, and prints a token as fsmonitor wants. */
export const plant = (marker: string, file: string): string =>
  `printf '#!/bin/sh\\nid -un > ${marker}\\nprintf x\\n' > ${file} && chmod +x ${file}`;

/** Runs argv on the host as `user` in `cwd` (runuser), as the person would from their own shell; output and errors, never throws. */
export function asUser(user: string, argv: string[], cwd: string): string {
  const r = spawnSync('runuser', ['-u', user, '--', 'env', `HOME=/home/${user}`, ...argv], { cwd, encoding: 'utf8', timeout: 20_000 });
  return `${r.stdout}${r.stderr}`;
}

/** The uid and gid of `user`, after making the user when missing (useradd). */
export function ensurePerson(user: string): { uid: number; gid: number } {
  if (spawnSync('id', ['-u', user]).status !== 0) spawnSync('useradd', ['--create-home', '--shell', '/bin/bash', user]);
  const uid = Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout);
  const gid = Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout);
  return { uid, gid };
}

/** Runs bash `script` on the host as the person (root) in `cwd`; never throws. */
export const hostBash = (cwd: string, script: string): void =>
  void spawnSync('bash', ['-c', script], { cwd, stdio: 'pipe', timeout: 20_000 });

/** What the marker a planted program leaves says: the user the person's git ran it as, or `not run`. */
export const ran = (marker: string): string => (fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : 'not run');

/** git in `cwd` as the person (root) on the host, file submodules allowed (`protocol.file.allow`): its output. */
export const personsGit = (cwd: string, ...a: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', '-c', 'protocol.file.allow=always', ...a], {
    encoding: 'utf8',
    stdio: 'pipe',
  });

/**
 * The person's repository ({@link personsRepo}) with one more file committed at the top (`top`: its name and text;
 * default `run.sh`, `echo hello`) and a nested clone of theirs at `vendor/lib` holding `run.sh` (`echo hello`, one
 * commit), made as the person (root) with {@link personsGit}. `vendor/` is not under the top's ignore rules unless
 * `top` says so. Returns the workspace and the clone's path.
 */
export function withNested(top: { name: string; text: string } = { name: 'run.sh', text: 'echo hello\n' }): { ws: string; lib: string } {
  const { ws, git } = personsRepo();
  fs.writeFileSync(path.join(ws, top.name), top.text);
  git('add', top.name);
  git('commit', '-qm', top.name);
  const lib = path.join(ws, 'vendor', 'lib');
  fs.mkdirSync(lib, { recursive: true });
  personsGit(lib, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(lib, 'run.sh'), 'echo hello\n');
  personsGit(lib, 'add', 'run.sh');
  personsGit(lib, 'commit', '-qm', 'lib');
  return { ws, lib };
}

/**
 * `output` without the git state audit's note at its end (src/session/git-state-audit.ts names every commit, branch
 * and ref the session made or moved), for tests about what else a command printed; the note, when there, is returned
 * apart so a test can check what it names.
 */
export function withoutStateNote(output: string): { output: string; note: string } {
  const m = /\[agent-jobs: the session left git state that your next git command obeys; review it: [^\n]*\]$/.exec(output);
  return m ? { output: output.slice(0, m.index), note: m[0] } : { output, note: '' };
}
