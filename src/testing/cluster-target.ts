/** The project's local Temporal cluster as a {@link Target} (wired when src/cluster lands). */
import type { Target } from './target';

/**
 * The running cluster, or one started now.
 * @throws Error until the cluster module is there
 */
export function clusterTarget(_o: { say?: (line: string) => void } = {}): Promise<Target> {
  return Promise.reject(new Error('the cluster module (src/cluster) is not merged yet; use --dev-server'));
}
