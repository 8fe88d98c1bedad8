/**
 * The project's local Temporal cluster (`npm run cluster`, src/dev/cluster) as
 * a {@link Target}: brought up when it does not run, stopped at the end
 * only when this process brought it up.
 */
import { clusterDown, clusterStatus, clusterUp, killServer, restartServer } from '../cluster';
import { serverInfo, type Target } from './target';

/**
 * The running cluster, or one started now (`clusterUp`, which installs
 * what is missing) when none runs; `say` tells which. A cluster that is
 * recorded but partly down is brought up again and counts as found (left
 * running at the end); one of which nothing ran counts as started here.
 * Its server faults are the cluster's own `killServer(i, 'SIGKILL')` and
 * `restartServer(i)` (which waits until the process rejoins the rings).
 * @throws what `clusterUp` throws (a tool missing, a process not coming up)
 */
export async function clusterTarget(o: { say?: (line: string) => void } = {}): Promise<Target> {
  const say = o.say ?? ((): void => {});
  const status = await clusterStatus();
  const nothingRan = !status.postgres?.alive && !status.servers.some((s) => s.alive);
  let state = status.state;
  if (!status.up || !state) {
    say(
      nothingRan
        ? 'no cluster runs: starting one (npm run cluster -- up); it is stopped at the end unless --keep'
        : 'the cluster runs only in part: bringing the rest up (it is left running at the end)',
    );
    state = await clusterUp({ say });
  } else say(`using the running cluster (${state.servers.map((s) => s.frontendAddress).join(', ')}); it is left running`);
  const startedHere = !status.up && nothingRan;
  return {
    kind: 'cluster',
    addresses: state.servers.map((s) => s.frontendAddress),
    namespace: state.namespace,
    startedHere,
    killServer: (index) => killServer(index, 'SIGKILL'),
    restartServer: (index) => restartServer(index),
    info: () => serverInfo(state.servers[0]!.frontendAddress),
    close: async ({ keep } = {}) => {
      if (startedHere && !keep) {
        say('stopping the cluster this command started (npm run cluster -- down)');
        await clusterDown({ say });
      }
    },
  };
}
