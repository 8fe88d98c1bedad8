/**
 * What a rewind's report holds and says (src/contract/checkpoint.ts): bounded for the history
 * whatever the workspace makes (many nested repositories, long names), and its sentence names
 * what a restore left (docs/rewind.md).
 */
import { MAX_REPORTED_CHANGES, MAX_REPORTED_CHARS, notRestoredText, reportedPrefix } from '../../../src/contract/checkpoint';

describe('a restore report', () => {
  test('lists at most MAX_REPORTED_CHANGES paths and MAX_REPORTED_CHARS characters of them, whatever the workspace holds', () => {
    const many = Array.from({ length: 100_000 }, (_, i) => `repos/r${i}`);
    expect(reportedPrefix(many, (p) => p)).toEqual(many.slice(0, MAX_REPORTED_CHANGES));
    // Names of 4,000 characters (a path may be 4,096 bytes): cut by characters long before the count.
    const long = Array.from({ length: 100 }, (_, i) => `${'x'.repeat(3_995)}${String(i).padStart(5, '0')}`);
    const kept = reportedPrefix(long, (p) => p);
    expect(kept.length).toBe(Math.floor(MAX_REPORTED_CHARS / 4_000));
    expect(JSON.stringify(kept).length).toBeLessThan(MAX_REPORTED_CHARS + 1_000);
    expect(reportedPrefix([], (p: string) => p)).toEqual([]);
  });

  test('its sentence names .git, the nested repositories (20 of them, the rest counted) and the excludes; nothing when there is nothing', () => {
    const nested = Array.from({ length: 25 }, (_, i) => `n${i}`);
    const text = notRestoredText(
      { nested: nested.slice(0, 22), nestedCount: 300, git: true, excluded: ['node_modules'] },
      'left as it is now',
    );
    expect(text).toMatch(/^Not restored, left as it is now: `\.git` \(the repository's commits, branches and index were not rewound\); /);
    expect(text).toContain('the nested git repositories n0, n1,');
    expect(text).toContain('n19 and 280 more (their files and commits as they are now)');
    expect(text).not.toContain('n20');
    expect(text).toContain('the excluded paths node_modules.');
    expect(notRestoredText({ nested: ['v'], git: true, excluded: [] }, 'not copied')).toBe(
      'Not restored, not copied: `.git` (this workspace has none: it is no git repository of its own); the nested git repositories v (empty folders here).',
    );
    expect(notRestoredText({ nested: [], git: false, excluded: [] }, 'left as it is now')).toBe('');
    // Paths git refuses to write that the restore left (store.ts restoreCheckpoint's `left`), 20 named and the rest counted.
    const refused = Array.from({ length: 21 }, (_, i) => `git~${i}/x (git refuses to write it; kept as it is)`);
    expect(notRestoredText({ nested: [], git: false, excluded: [], refused, refusedCount: 30 }, 'left as it is now')).toBe(
      `Not restored, left as it is now: paths git refuses to write ${refused.slice(0, 20).join(', ')} and 10 more.`,
    );
  });
});
