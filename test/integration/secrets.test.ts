/**
 * Secrets in child processes: a real worker process holds a fake API key,
 * an extra secret (AGENT_JOBS_SECRET_ENV) and a token secret only by its
 * value's shape (a URL whose user is a GitHub token, under an innocent name); while a session command runs,
 * no process descending from the worker (sentinel, bwrap, setpriv, bash,
 * the command) holds either value in /proc/<pid>/environ, the worker's own
 * block included (src/proc-environ.ts overwrites it), and from inside the
 * session neither `ps e` nor `cat /proc/*\/environ` finds them.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { TestBed, toolUse, waitFor } from './harness';

/** Every live process whose parent chain leads to `root` (root included), from /proc/<pid>/stat. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const out: number[] = [];
  for (const pid of parent.keys()) {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}

function environ(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1');
  } catch {
    return undefined;
  }
}

describe('secrets stay out of every process the worker starts', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('no descendant of the worker holds the API key or an AGENT_JOBS_SECRET_ENV value, and the session finds none', async () => {
    const tag = randomBytes(6).toString('hex');
    const key = `sk-ant-fake-${tag}`;
    const extra = `xsecret-${tag}`;
    const token = `ghp_${tag}${'Z'.repeat(24)}`;
    // Patterns that match the values without containing them (a grep's own argv must not match).
    const find =
      "ps e -ww -A | grep -c 'sk-ant-fake-[0-9a-f]\\{12\\}\\|xsecret-[0-9a-f]\\{12\\}\\|ghp_[0-9a-f]\\{12\\}Z\\{24\\}'; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 'sk-ant-fake-[0-9a-f]\\{12\\}\\|xsecret-[0-9a-f]\\{12\\}\\|ghp_[0-9a-f]\\{12\\}Z\\{24\\}'; true";
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_wait', `sleep 4.${tag.replace(/[a-f]/g, '7')}; ${find}`)], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
      workerEnv: {
        ANTHROPIC_API_KEY: key,
        AGENT_JOBS_SECRET_ENV: 'MY_EXTRA_THING',
        MY_EXTRA_THING: extra,
        REPO_URL: `https://${token}@github.com/o/r.git`,
      },
    });
    const worker = bed.workers[0]!;
    const handle = await bed.start({ task: 'hold the session open', approval: 'auto' }, 'secrets');

    // While the command sleeps: the whole tree under the worker.
    const tree = await waitFor('the command running under the worker', () => {
      const pids = descendants(worker.pid);
      return pids.some((p) => (readFileSync(`/proc/${p}/cmdline`, 'latin1') ?? '').startsWith('sleep')) ? pids : undefined;
    });
    const comms = tree.map((p) => {
      try {
        return readFileSync(`/proc/${p}/comm`, 'utf8').trim();
      } catch {
        return '?';
      }
    });
    // The sentinel, bwrap (outer and its pid 1), bash and the command are all there.
    expect(comms).toEqual(expect.arrayContaining(['node', 'sh', 'bash', 'sleep']));
    if (comms.includes('bwrap')) expect(comms.filter((c) => c === 'bwrap')).toHaveLength(2);
    const holding = tree.filter((p) => {
      const env = environ(p);
      return env !== undefined && (env.includes(key) || env.includes(extra) || env.includes(token));
    });
    expect({ holding, comms }).toEqual({ holding: [], comms });
    // The worker's own block: the names are there, the values overwritten.
    const own = environ(worker.pid)!;
    expect(own).toContain('ANTHROPIC_API_KEY=*');
    expect(own).toContain('MY_EXTRA_THING=*');
    expect(own).toContain('REPO_URL=*');

    // status names who bash runs as and its sandbox.
    if (process.getuid?.() === 0)
      expect((await bed.status(handle)).session).toMatchObject({ user: 'agent-jobs', sandbox: comms.includes('bwrap') ? 'bwrap' : 'none' });

    const result = await handle.result();
    expect(result.status).toBe('completed');
    const last = bed.sentMessages()[1]!;
    const content = (last[last.length - 1]!.content as Array<{ content: string }>)[0]!.content;
    expect(content).toBe('0\n0');
  });
});
