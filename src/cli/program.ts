/** The `agent-jobs` command program: one file per command under `commands/`. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, Help } from 'commander';
import { registerCancel } from './commands/cancel';
import { registerCodecServer } from './commands/codec-server';
import { registerDecide } from './commands/decide';
import { registerExtend } from './commands/extend';
import { registerList } from './commands/list';
import { registerModelServer } from './commands/model-server';
import { registerModels } from './commands/models';
import { registerServer } from './commands/server';
import { registerStart } from './commands/start';
import { registerStatus } from './commands/status';
import { registerSteer } from './commands/steer';
import { registerPending } from './commands/pending';
import { registerRewind } from './commands/rewind';
import { registerTranscript } from './commands/transcript';
import { registerWatch } from './commands/watch';
import { registerWorker } from './commands/worker';

/** The version in package.json (two levels up from src/cli and from dist/cli alike). */
function packageVersion(): string {
  return (JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
}

/** The program with every command registered (src/cli/commands), `--version` and help. */
export function buildProgram(): Command {
  const program = new Command('agent-jobs')
    .description(
      "Claude agents as durable, human-supervised jobs on Temporal.\nConnection: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (and the rest of Temporal's envconfig); model: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, AGENT_JOBS_MODEL.",
    )
    .version(packageVersion(), '--version', "print the package's version")
    .showHelpAfterError('(add --help for usage)')
    // A required option says so in its command's help (commander lists it among the optional ones otherwise).
    // Subcommands made after this call take the setting over (commander's copyInheritedSettings).
    .configureHelp({
      optionDescription: (option) => {
        const text = new Help().optionDescription(option);
        return option.mandatory ? `(required) ${text}` : text;
      },
    });
  registerStart(program);
  registerStatus(program);
  registerDecide(program);
  registerSteer(program);
  registerExtend(program);
  registerPending(program);
  registerWatch(program);
  registerList(program);
  registerTranscript(program);
  registerRewind(program);
  registerCancel(program);
  registerWorker(program);
  registerServer(program);
  registerModels(program);
  registerModelServer(program);
  registerCodecServer(program);
  return program;
}
