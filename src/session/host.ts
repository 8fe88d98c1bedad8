/**
 * What the sessions of one process share: the guard's {@link Watchdog} (one
 * timer for all of them) and what is looked up once about the machine
 * (setpriv, a working bwrap, the session users made, the seccomp launcher of mode `none`). Whoever starts
 * sessions owns one and passes it in `BashSessionOptions.host` (the worker
 * makes one at start); a session given none makes its own.
 */
import { Watchdog } from './guard';
import type { SessionIdentity } from './identity';
import { findSeccompLauncher, SECCOMP_LAUNCHER_PYTHONS, type SeccompLauncherLookup } from './seccomp-launch';
import { findSetpriv } from './shell';

/** One process's shared session facts; see the module comment. */
export class SessionHost {
  /** Checks every guard of this host's sessions (guard.ts). */
  readonly watchdog = new Watchdog();
  /** sandbox.ts `findBwrap`'s answers by search path. */
  readonly bwrapProbes = new Map<string, string | null>();
  /** Session users ensured, by name (identity.ts `ensureSessionUser`). */
  readonly users = new Map<string, SessionIdentity>();
  private setprivPath: string | null | undefined;
  private launcher: SeccompLauncherLookup | undefined;
  private readonly pythons: readonly string[];

  /**
   * @param options.pythons the interpreters the seccomp launcher may use, absolute paths
   *   (seccomp-launch.ts) @default {@link SECCOMP_LAUNCHER_PYTHONS}
   */
  constructor(options: { pythons?: readonly string[] } = {}) {
    this.pythons = options.pythons ?? SECCOMP_LAUNCHER_PYTHONS;
  }

  /** util-linux's setpriv with `--pdeathsig`, or null; looked up on the first call (shell.ts `findSetpriv`). */
  setpriv(): string | null {
    if (this.setprivPath === undefined) this.setprivPath = findSetpriv();
    return this.setprivPath;
  }

  /**
   * The python3 that loads the seccomp filter in mode `none` (seccomp-launch.ts `findSeccompLauncher`),
   * or null and why; looked up on the first call. When there is none, the first call says so as a
   * process warning (type `AgentJobsSandboxWarning`) unless `warn` is false (the worker logs it
   * itself at start): this host's mode-`none` sessions then run without the filter.
   */
  seccompLauncher(warn = true): SeccompLauncherLookup {
    if (this.launcher === undefined) {
      this.launcher = findSeccompLauncher(this.pythons);
      if (!this.launcher.python && warn)
        process.emitWarning(`sessions without the sandbox run without the seccomp filter: ${this.launcher.why}`, {
          type: 'AgentJobsSandboxWarning',
        });
    }
    return this.launcher;
  }
}
