/**
 * A worker in a container without a working sandbox refuses to start
 * unless AGENT_JOBS_SANDBOX=none says so: Docker's defaults
 * forbid bwrap's namespaces, and a silent fallback would run every command
 * with the container's whole view. Each way a container shows itself is
 * tried, and so is each way out.
 */
import { containerName, containerSandboxProblem, type HostProbe } from '../../../src/session';

function probe(files: Record<string, string> = {}, env: NodeJS.ProcessEnv = {}): HostProbe {
  return { exists: (p) => p in files, read: (p) => files[p] ?? null, env };
}

test.each<[string, HostProbe, string | null]>([
  ['/.dockerenv', probe({ '/.dockerenv': '' }), 'docker'],
  ['/run/.containerenv', probe({ '/run/.containerenv': '' }), 'podman'],
  ['systemd container=', probe({}, { container: 'lxc' }), 'lxc'],
  ['a kubepods cgroup', probe({ '/proc/1/cgroup': '0::/kubepods/besteffort/pod1/abc\n' }), 'kubepods'],
  ['a docker cgroup (v1)', probe({ '/proc/1/cgroup': '12:pids:/docker/0123abcd\n' }), 'docker'],
  ['a plain host (cgroup v2 root)', probe({ '/proc/1/cgroup': '0::/init.scope\n' }), null],
])('containerName: %s', (_what, p, expected) => {
  expect(containerName(p)).toBe(expected);
});

test('in a container with no working bwrap the worker refuses, naming what to allow and the way out', () => {
  const p = probe({ '/.dockerenv': '' });
  for (const mode of ['none', 'unavailable'] as const) {
    const why = containerSandboxProblem(mode, p);
    expect(why).toMatch(
      /^refusing to start: this worker runs in a container \(docker\) with no working bwrap \(not installed, or its namespaces are not allowed\)/,
    );
    expect(why).toContain('cap_add SYS_ADMIN');
    expect(why).toContain('AGENT_JOBS_SANDBOX=none');
  }
});

test('it starts with a working sandbox, with AGENT_JOBS_SANDBOX=none set explicitly, or outside a container', () => {
  expect(containerSandboxProblem('bwrap', probe({ '/.dockerenv': '' }))).toBeNull();
  expect(containerSandboxProblem('none', probe({ '/.dockerenv': '' }, { AGENT_JOBS_SANDBOX: 'none' }))).toBeNull();
  expect(containerSandboxProblem('none', probe({ '/proc/1/cgroup': '0::/\n' }))).toBeNull();
});

test('AGENT_JOBS_SANDBOX=bwrap that cannot work is no way out: still refused in a container', () => {
  expect(containerSandboxProblem('unavailable', probe({ '/.dockerenv': '' }, { AGENT_JOBS_SANDBOX: 'bwrap' }))).toMatch(
    /^refusing to start/,
  );
});
