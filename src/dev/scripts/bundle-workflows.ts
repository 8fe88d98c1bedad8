/**
 * `npm run build` step: bundles the workflow code once into
 * `dist/workflow-bundle.js`, so workers start in well under a second
 * instead of running webpack at every start. The bundler also fails the
 * build when workflow code reaches a Node module (C15).
 */
import { writeFile } from 'node:fs/promises';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { PAYLOAD_CONVERTER_PATH } from '../../codec';
import { WORKFLOW_BUNDLE_PATH } from '../../worker';

async function main(): Promise<void> {
  // The payload converter that tells the workflow which decisions came sealed (src/shared/sealed.ts).
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    payloadConverterPath: PAYLOAD_CONVERTER_PATH,
    logger: new DefaultLogger('WARN'),
  });
  await writeFile(WORKFLOW_BUNDLE_PATH, code);
  process.stdout.write(`workflow bundle: ${WORKFLOW_BUNDLE_PATH} (${(code.length / 1024).toFixed(0)} KiB)\n`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
