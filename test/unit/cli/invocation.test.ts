/** Hints print a command that works where the person is: `npx agent-jobs …` under npx, `agent-jobs …` on the PATH, else `node <bin> …`. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { asTyped, cliCommand } from '../../../src/cli/invocation';

describe('how a hint writes the CLI', () => {
  test('npx and npm run (npm_command exec, run-script) get npx agent-jobs; agent-jobs on the PATH gets agent-jobs; else node and the bin', () => {
    expect(cliCommand({ npm_command: 'exec' })).toBe('npx agent-jobs');
    expect(cliCommand({ npm_command: 'run-script' })).toBe('npx agent-jobs');
    const bin = mkdtempSync(path.join(tmpdir(), 'aj-path-'));
    try {
      writeFileSync(path.join(bin, 'agent-jobs'), '#!/bin/sh\n', { mode: 0o755 });
      expect(cliCommand({ PATH: `/nonexistent${path.delimiter}${bin}` })).toBe('agent-jobs');
      // Not executable: not what a shell would run.
      chmodSync(path.join(bin, 'agent-jobs'), 0o644);
      expect(cliCommand({ PATH: bin }, '/')).toBe(`node ${path.resolve(__dirname, '../../../bin/agent-jobs.js')}`);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
    // Run from the checkout (the README's way): the bin's path relative to it, and every hint rewritten so.
    const root = path.resolve(__dirname, '../../..');
    expect(cliCommand({ PATH: '' }, root)).toBe('node bin/agent-jobs.js');
    expect(asTyped('see `agent-jobs status r1`; start one with `agent-jobs worker`', { PATH: '' }, root)).toBe(
      'see `node bin/agent-jobs.js status r1`; start one with `node bin/agent-jobs.js worker`',
    );
  });

  test('asTyped rewrites every quoted command, and only those', () => {
    const npx = { npm_command: 'exec' };
    expect(asTyped('see `agent-jobs status r1`; or `agent-jobs pending`', npx)).toBe(
      'see `npx agent-jobs status r1`; or `npx agent-jobs pending`',
    );
    expect(asTyped('list runs with `agent-jobs`', npx)).toBe('list runs with `npx agent-jobs`');
    // The product's name in prose, a task queue or a user name stays as it is.
    expect(asTyped('the agent-jobs task queue; agent-jobs: failed; `agent-jobs-worker`', npx)).toBe(
      'the agent-jobs task queue; agent-jobs: failed; `agent-jobs-worker`',
    );
    expect(asTyped('see `agent-jobs status r1`', { PATH: process.env.PATH }, '/')).toMatch(
      /^see `(agent-jobs|node \/\S+\/bin\/agent-jobs\.js) status r1`$/,
    );
  });
});
