/**
 * Headless Chromium for the docs' screenshots: finding it, installing the
 * pinned Debian package when it is missing, the command lines of a
 * screenshot and of a DOM dump, and a check that a PNG shows a page rather
 * than a blank or half-drawn one. The functions that build or judge
 * something are pure, for the unit tests; the rest run programs.
 */
import { inflateSync } from 'node:zlib';
import { execa } from '../testing/exec';

/**
 * Version of Debian's `chromium` package installed when none is found
 * (bookworm-security, as `apt-cache policy chromium` listed it when the
 * screenshots were last taken). Pinned so that regenerated screenshots do
 * not change with the browser; when the mirror no longer carries it,
 * {@link ensureChromium} says which version it does carry, to put here.
 */
export const CHROMIUM_VERSION = '156.0.8078.114-1~deb12u1';

/** The Debian package, and the program it installs. */
export const CHROMIUM_PACKAGE = 'chromium';

/** Chromium could not be found or installed. The message says what to do. */
export class ChromiumMissingError extends Error {
  constructor(detail: string) {
    super(`headless Chromium is not available: ${detail}`);
    this.name = 'ChromiumMissingError';
  }
}

/** What `apt-cache policy <package>` says about one package. */
export interface AptPolicy {
  /** Installed version, or null for `(none)`. */
  installed: string | null;
  /** The version `apt-get install <package>` would install, or null for `(none)` or no such package. */
  candidate: string | null;
  /** Every version the package lists (the version table), newest first as apt prints them. */
  versions: string[];
}

/**
 * Parses the output of `apt-cache policy <package>` (one package).
 * Output of an unknown package (empty, or only a warning) gives nulls and no versions.
 */
export function parseAptPolicy(text: string): AptPolicy {
  const field = (name: string): string | null => {
    const m = new RegExp(`^\\s*${name}:\\s*(\\S+)\\s*$`, 'm').exec(text);
    return m && m[1] !== '(none)' ? m[1]! : null;
  };
  const table = text.split(/^\s*Version table:\s*$/m)[1] ?? '';
  // A version line: optional "***" (installed), the version, the pin priority; the source lines under it start with a priority.
  const versions = [...table.matchAll(/^\s*(?:\*\*\*\s+)?([^\s*]+)\s+-?\d+\s*$/gm)].map((m) => m[1]!).filter((v) => !/^\d+$/.test(v));
  return { installed: field('Installed'), candidate: field('Candidate'), versions };
}

/** What {@link checkPin} found. */
export type PinCheck =
  /** The pinned version is installed. */
  | { kind: 'installed' }
  /** Another version is installed: it is used, with a warning, since the screenshots may then differ a little. */
  | { kind: 'other-installed'; installed: string }
  /** Nothing installed; the pinned version can be installed. */
  | { kind: 'installable' }
  /** Nothing installed, and the package lists do not carry the pinned version (they may be stale, or it was superseded). */
  | { kind: 'unavailable'; candidate: string | null };

/** Judges an `apt-cache policy` answer against the pinned `version`. */
export function checkPin(policy: AptPolicy, version: string): PinCheck {
  if (policy.installed === version) return { kind: 'installed' };
  if (policy.installed !== null) return { kind: 'other-installed', installed: policy.installed };
  if (policy.versions.includes(version) || policy.candidate === version) return { kind: 'installable' };
  return { kind: 'unavailable', candidate: policy.candidate };
}

/** `argv` as root: unchanged for root (`uid` 0), else through `sudo -n` (which fails rather than asks for a password). */
export function asRoot(argv: string[], uid: number): string[] {
  return uid === 0 ? argv : ['sudo', '-n', ...argv];
}

/**
 * The command that installs `package=version` with apt-get, non-interactively
 * and without recommended packages, as root (see {@link asRoot}).
 * @returns argv, the program first
 */
export function aptInstallCommand(version: string, uid: number, pkg = CHROMIUM_PACKAGE): string[] {
  // Through `env`: sudo drops the caller's environment, and debconf would otherwise ask.
  return asRoot(['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '--no-install-recommends', `${pkg}=${version}`], uid);
}

/** Options of a headless Chromium run against one page. */
export interface PageOptions {
  url: string;
  /** Window (and viewport) size in CSS pixels; the PNG has as many pixels (scale factor 1). @default 1400 × 1000 */
  width?: number;
  height?: number;
  /** A fresh profile folder, so no earlier state (theme, cookies) changes the page. */
  userDataDir: string;
}

/**
 * The command line of a headless Chromium driven over the DevTools protocol
 * on a pipe (fd 3: commands in, fd 4: answers out, each JSON message ended
 * by a NUL), starting on an empty page.
 *
 * Not `--screenshot=FILE URL`: that captures at the load event, before the
 * Temporal UI (a single-page app) has fetched the run, so the PNG is an
 * empty page; with `--virtual-time-budget` it never captures, since virtual
 * time stands still while a request is open and a run's page always keeps
 * one open. Driving the page lets {@link capturePage} wait until the page
 * shows the run, then capture.
 */
export function chromiumArgs(o: Omit<PageOptions, 'url'>): string[] {
  return [
    '--headless=new',
    // Running as root in a container: Chromium's own sandbox needs namespaces it is not given.
    '--no-sandbox',
    '--disable-gpu',
    '--hide-scrollbars',
    '--no-first-run',
    '--no-default-browser-check',
    '--disable-extensions',
    '--force-device-scale-factor=1',
    '--run-all-compositor-stages-before-draw',
    `--user-data-dir=${o.userDataDir}`,
    `--window-size=${o.width ?? 1400},${o.height ?? 1000}`,
    '--remote-debugging-pipe',
    'about:blank',
  ];
}

/** What {@link pngStats} measured. */
export interface PngStats {
  width: number;
  height: number;
  /** Distinct colours (RGB, alpha ignored), counted up to 100,000. */
  colours: number;
  /** Share (0..1) of the pixels that have the most common colour. */
  dominantShare: number;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The Paeth predictor of the PNG spec (filter type 4). */
function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Undoes the per-row filters of a non-interlaced 8-bit image with `bpp` bytes per pixel. */
function unfilter(data: Buffer, width: number, height: number, bpp: number): Buffer {
  const stride = width * bpp;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const type = data[y * (stride + 1)]!;
    const src = y * (stride + 1) + 1;
    const row = y * stride;
    for (let x = 0; x < stride; x++) {
      const raw = data[src + x]!;
      const a = x >= bpp ? out[row + x - bpp]! : 0;
      const b = y > 0 ? out[row - stride + x]! : 0;
      const c = x >= bpp && y > 0 ? out[row - stride + x - bpp]! : 0;
      const pred = type === 0 ? 0 : type === 1 ? a : type === 2 ? b : type === 3 ? (a + b) >> 1 : type === 4 ? paeth(a, b, c) : NaN;
      if (Number.isNaN(pred)) throw new Error(`PNG row ${y} has an unknown filter type ${type}`);
      out[row + x] = (raw + pred) & 0xff;
    }
  }
  return out;
}

/**
 * Decodes a PNG (8-bit RGB or RGBA, not interlaced: what Chromium writes)
 * and measures how much it shows.
 * @throws Error when it is not a PNG, or one of another kind
 */
export function pngStats(png: Buffer): PngStats {
  if (png.length < 33 || !png.subarray(0, 8).equals(PNG_SIGNATURE)) throw new Error('not a PNG file');
  let offset = 8;
  let header: { width: number; height: number; depth: number; colourType: number; interlace: number } | null = null;
  const idat: Buffer[] = [];
  while (offset + 8 <= png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const body = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR')
      header = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8]!, colourType: body[9]!, interlace: body[12]! };
    else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  if (!header) throw new Error('PNG without an IHDR chunk');
  const bpp = header.colourType === 2 ? 3 : header.colourType === 6 ? 4 : 0;
  if (header.depth !== 8 || bpp === 0 || header.interlace !== 0)
    throw new Error(`unsupported PNG (bit depth ${header.depth}, colour type ${header.colourType}, interlace ${header.interlace})`);
  const pixels = unfilter(inflateSync(Buffer.concat(idat)), header.width, header.height, bpp);
  const counts = new Map<number, number>();
  for (let i = 0; i < pixels.length; i += bpp) {
    const rgb = (pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!;
    const n = counts.get(rgb);
    if (n !== undefined) counts.set(rgb, n + 1);
    else if (counts.size < 100_000) counts.set(rgb, 1);
  }
  const total = header.width * header.height;
  const dominant = Math.max(0, ...counts.values());
  return { width: header.width, height: header.height, colours: counts.size, dominantShare: total === 0 ? 1 : dominant / total };
}

/**
 * Thresholds of {@link blankReason}. A drawn Temporal UI page has hundreds of
 * colours (anti-aliased text, badges, icons) and its background covers
 * well under 97 % of it; a blank page or a lone spinner has a handful of
 * colours on 99 % background.
 */
export const PAGE_THRESHOLDS = { minColours: 64, maxDominantShare: 0.97 } as const;

/**
 * Why a screenshot does not show a drawn page, or null when it does: the
 * wrong size, too few colours, or one colour nearly everywhere.
 */
export function blankReason(stats: PngStats, width: number, height: number, t: typeof PAGE_THRESHOLDS = PAGE_THRESHOLDS): string | null {
  if (stats.width !== width || stats.height !== height) return `it is ${stats.width}×${stats.height}, not ${width}×${height}`;
  if (stats.colours < t.minColours) return `it has only ${stats.colours} colours (a drawn page has at least ${t.minColours})`;
  if (stats.dominantShare > t.maxDominantShare)
    return `one colour covers ${(stats.dominantShare * 100).toFixed(1)} % of it (a drawn page: at most ${t.maxDominantShare * 100} %)`;
  return null;
}

async function onPath(program: string): Promise<string | null> {
  const r = await execa('which', [program], { reject: false });
  return r.exitCode === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

async function aptPolicy(): Promise<AptPolicy> {
  const r = await execa('apt-cache', ['policy', CHROMIUM_PACKAGE], { reject: false, env: { LC_ALL: 'C' } });
  return parseAptPolicy(r.exitCode === 0 ? r.stdout : '');
}

/**
 * Finds `chromium` on the PATH (`AGENT_JOBS_CHROMIUM` first, when set), or
 * installs Debian's `chromium` at {@link CHROMIUM_VERSION} with apt-get
 * (through `sudo -n` when not root; `apt-get update` once when the package
 * lists do not carry that version). A Chromium installed at another
 * version is used, with a warning through `say`.
 * @returns the program's path
 * @throws ChromiumMissingError when there is no apt, the pinned version is not on the mirror, or the install fails
 */
export async function ensureChromium(say: (line: string) => void): Promise<string> {
  const configured = process.env.AGENT_JOBS_CHROMIUM;
  if (configured) return configured;
  const found = await onPath(CHROMIUM_PACKAGE);
  let policy = await aptPolicy();
  if (found) {
    const check = checkPin(policy, CHROMIUM_VERSION);
    if (check.kind === 'other-installed')
      say(`using chromium ${check.installed} (screenshots are pinned to ${CHROMIUM_VERSION}; they may differ a little)`);
    return found;
  }
  if (!(await onPath('apt-get')))
    throw new ChromiumMissingError(
      `no chromium on the PATH and no apt-get to install it with; install Chromium and set AGENT_JOBS_CHROMIUM`,
    );
  const uid = process.getuid?.() ?? 0;
  if (checkPin(policy, CHROMIUM_VERSION).kind === 'unavailable') {
    say('the package lists do not carry the pinned chromium: apt-get update');
    const [program, ...args] = asRoot(['apt-get', 'update', '-q'], uid);
    await execa(program!, args, { reject: false });
    policy = await aptPolicy();
  }
  const check = checkPin(policy, CHROMIUM_VERSION);
  if (check.kind === 'unavailable')
    throw new ChromiumMissingError(
      `Debian's mirror no longer carries chromium=${CHROMIUM_VERSION}` +
        (check.candidate ? `; it offers ${check.candidate}: put that in CHROMIUM_VERSION (src/dev/scripts/chromium.ts)` : ''),
    );
  const [program, ...args] = aptInstallCommand(CHROMIUM_VERSION, uid);
  say(`installing chromium ${CHROMIUM_VERSION} from Debian: ${[program, ...args].join(' ')}`);
  const r = await execa(program!, args, { reject: false, all: true });
  const installed = await onPath(CHROMIUM_PACKAGE);
  if (r.exitCode !== 0 || !installed) {
    const last = (r.all ?? '').trim().split('\n').slice(-2).join(' / ');
    throw new ChromiumMissingError(`${[program, ...args].join(' ')} failed (exit ${r.exitCode}): ${last}`);
  }
  return installed;
}
