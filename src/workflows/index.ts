/** Workflows this project's workers register (bundled into the workflow sandbox). */
export { agentRun } from './agent-run';
