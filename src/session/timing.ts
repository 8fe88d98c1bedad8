/** Waiting helpers shared by the session's modules. */

/**
 * Waits for `p` to settle or `ms` milliseconds to pass, whichever comes
 * first; the timer is cleared either way.
 * @throws what `p` rejects with, when it rejects first
 */
export async function raceTimeout(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
