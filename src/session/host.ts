/**
 * What the sessions of one process share: the guard's {@link Watchdog} (one
 * timer for all of them) and what is looked up once about the machine
 * (setpriv, a working bwrap, the session users made). Whoever starts
 * sessions owns one and passes it in `BashSessionOptions.host` (the worker
 * makes one at start); a session given none makes its own.
 */
import { Watchdog } from './guard';
import type { SessionIdentity } from './identity';
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

  /** util-linux's setpriv with `--pdeathsig`, or null; looked up on the first call (shell.ts `findSetpriv`). */
  setpriv(): string | null {
    if (this.setprivPath === undefined) this.setprivPath = findSetpriv();
    return this.setprivPath;
  }
}
