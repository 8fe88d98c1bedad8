/**
 * A small YAML writer for the server's config files: plain objects,
 * arrays, strings, numbers and booleans, block style. Every string is
 * written double-quoted with JSON escapes, which YAML reads back
 * unchanged, so no value can be taken for a number, a boolean or a key.
 */

/** A value {@link toYaml} can write. */
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue | undefined };

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

function scalar(v: string | number | boolean | null): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`cannot write ${v} as YAML`);
  return String(v);
}

function key(k: string): string {
  return PLAIN_KEY.test(k) ? k : JSON.stringify(k);
}

function isEmpty(v: YamlValue): boolean {
  return Array.isArray(v) ? v.length === 0 : typeof v === 'object' && v !== null && Object.keys(v).length === 0;
}

function lines(value: YamlValue, indent: string): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item) => {
      if (typeof item !== 'object' || item === null || isEmpty(item)) return [`${indent}- ${inline(item)}`];
      const [first, ...rest] = lines(item, `${indent}  `);
      return [`${indent}- ${first!.trimStart()}`, ...rest];
    });
  }
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => {
      if (v === undefined) return [];
      if (typeof v !== 'object' || v === null || isEmpty(v)) return [`${indent}${key(k)}: ${inline(v)}`];
      return [`${indent}${key(k)}:`, ...lines(v, `${indent}  `)];
    });
  }
  return [`${indent}${scalar(value)}`];
}

function inline(v: YamlValue): string {
  if (Array.isArray(v)) return '[]';
  if (typeof v === 'object' && v !== null) return '{}';
  return scalar(v);
}

/**
 * `value` as a YAML document (block style, two-space indent, ending in a
 * newline), with `comment` lines first as `# ...`. Keys that are undefined
 * are left out.
 * @throws Error for a number that is not finite
 */
export function toYaml(value: YamlValue, comment: string[] = []): string {
  return [...comment.map((c) => (c ? `# ${c}` : '#')), ...lines(value, '')].join('\n') + '\n';
}
