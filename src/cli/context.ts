/** Per-command plumbing: a connected client, closed when the command ends. */
import { connectClient, type ConnectedClient } from '../temporal';
import { temporalUiUrl, workflowUiUrl } from '../settings';

/**
 * Runs `fn` with a connected Temporal client and closes the connection
 * afterwards.
 * @throws TemporalUnreachableError when no server answers
 */
export async function withClient<T>(
  fn: (c: ConnectedClient & { uiUrl: (workflowId: string, runId?: string) => string }) => Promise<T>,
): Promise<T> {
  const connected = await connectClient();
  const uiBase = temporalUiUrl(connected.settings.address);
  try {
    return await fn({ ...connected, uiUrl: (id, runId) => workflowUiUrl(uiBase, connected.settings.namespace, id, runId) });
  } finally {
    await connected.connection.close();
  }
}
