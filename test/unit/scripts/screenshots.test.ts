/**
 * The pure parts of `npm run screenshots`: the pinned Chromium check, the
 * commands it runs, the blank-page check, and how an unknown Update is told
 * from a rejected one. No network, no Chromium.
 */
import { runInNewContext } from 'node:vm';
import { deflateSync } from 'node:zlib';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import {
  CHROMIUM_VERSION,
  aptInstallCommand,
  blankReason,
  checkPin,
  chromiumArgs,
  parseAptPolicy,
  pngStats,
} from '../../../src/dev/scripts/chromium';
import { SHOTS, SHOT_SIZE, clipToEvent, expectedTexts, isUnknownUpdate, windowOf } from '../../../src/dev/scripts/screenshots';

const POLICY_NONE = `chromium:
  Installed: (none)
  Candidate: 156.0.8078.114-1~deb12u1
  Version table:
     156.0.8078.114-1~deb12u1 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
     150.0.7871.100-1~deb12u1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
`;

const POLICY_INSTALLED = `chromium:
  Installed: 150.0.7871.100-1~deb12u1
  Candidate: 156.0.8078.114-1~deb12u1
  Version table:
     156.0.8078.114-1~deb12u1 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
 *** 150.0.7871.100-1~deb12u1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
        100 /var/lib/dpkg/status
`;

describe('the pinned chromium', () => {
  test('apt-cache policy is read: installed, candidate, every listed version', () => {
    expect(parseAptPolicy(POLICY_NONE)).toEqual({
      installed: null,
      candidate: '156.0.8078.114-1~deb12u1',
      versions: ['156.0.8078.114-1~deb12u1', '150.0.7871.100-1~deb12u1'],
    });
    expect(parseAptPolicy(POLICY_INSTALLED).installed).toBe('150.0.7871.100-1~deb12u1');
    expect(parseAptPolicy(POLICY_INSTALLED).versions).toEqual(['156.0.8078.114-1~deb12u1', '150.0.7871.100-1~deb12u1']);
    expect(parseAptPolicy('')).toEqual({ installed: null, candidate: null, versions: [] });
  });

  test('the pin is installable, installed, another version is installed, or gone from the mirror', () => {
    expect(checkPin(parseAptPolicy(POLICY_NONE), '156.0.8078.114-1~deb12u1')).toEqual({ kind: 'installable' });
    expect(checkPin(parseAptPolicy(POLICY_NONE), '150.0.7871.100-1~deb12u1')).toEqual({ kind: 'installable' });
    expect(checkPin(parseAptPolicy(POLICY_INSTALLED), '150.0.7871.100-1~deb12u1')).toEqual({ kind: 'installed' });
    expect(checkPin(parseAptPolicy(POLICY_INSTALLED), '156.0.8078.114-1~deb12u1')).toEqual({
      kind: 'other-installed',
      installed: '150.0.7871.100-1~deb12u1',
    });
    expect(checkPin(parseAptPolicy(POLICY_NONE), '149.0-1')).toEqual({ kind: 'unavailable', candidate: '156.0.8078.114-1~deb12u1' });
    expect(checkPin(parseAptPolicy(''), CHROMIUM_VERSION)).toEqual({ kind: 'unavailable', candidate: null });
  });

  test('the pin is a full Debian version, so apt installs exactly it', () => {
    expect(CHROMIUM_VERSION).toMatch(/^\d+\.\d+\.\d+\.\d+-\d+(~deb\d+u\d+)?$/);
  });

  test('apt-get install names package=version, and goes through sudo only when not root', () => {
    const apt = [
      'env',
      'DEBIAN_FRONTEND=noninteractive',
      'apt-get',
      'install',
      '-y',
      '--no-install-recommends',
      `chromium=${CHROMIUM_VERSION}`,
    ];
    expect(aptInstallCommand(CHROMIUM_VERSION, 0)).toEqual(apt);
    expect(aptInstallCommand(CHROMIUM_VERSION, 1000)).toEqual(['sudo', '-n', ...apt]);
  });
});

describe('the chromium command line', () => {
  test('headless, no sandbox, no GPU, the window size, a fresh profile, the DevTools pipe', () => {
    const args = chromiumArgs({ width: 1400, height: 1000, userDataDir: '/tmp/p' });
    for (const flag of [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--hide-scrollbars',
      '--window-size=1400,1000',
      '--user-data-dir=/tmp/p',
    ])
      expect(args).toContain(flag);
    expect(args).toContain('--remote-debugging-pipe');
    // The page is opened over the pipe, once the capture can wait for it.
    expect(args[args.length - 1]).toBe('about:blank');
    expect(args.filter((a) => a.startsWith('http'))).toEqual([]);
  });

  test('the default window is 1400 × 1000', () => {
    expect(chromiumArgs({ userDataDir: 'd' })).toContain('--window-size=1400,1000');
  });
});

/** A PNG (8-bit RGB, filter type `filter` on every row) of `width` × `height` pixels from `pixel(x, y)`. */
function png(width: number, height: number, pixel: (x: number, y: number) => [number, number, number], filter = 0): Buffer {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    raw[row] = filter;
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y);
      const left = x > 0 ? pixel(x - 1, y) : [0, 0, 0];
      // Filter 1 (Sub) stores the difference to the pixel on the left.
      const v = filter === 1 ? [r - left[0]!, g - left[1]!, b - left[2]!] : [r, g, b];
      for (let i = 0; i < 3; i++) raw[row + 1 + x * 3 + i] = v[i]! & 0xff;
    }
  }
  const chunk = (type: string, body: Buffer): Buffer => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(body.length, 0);
    head.write(type, 4, 'latin1');
    return Buffer.concat([head, body, Buffer.alloc(4)]); // the CRC is not checked
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

describe('the blank-page check', () => {
  const busy = (x: number, y: number): [number, number, number] => [(x * 7) % 256, (y * 13) % 256, (x + y) % 256];

  test('an empty page (one colour) is blank', () => {
    const stats = pngStats(png(40, 30, () => [250, 250, 252]));
    expect(stats).toEqual({ width: 40, height: 30, colours: 1, dominantShare: 1 });
    expect(blankReason(stats, 40, 30)).toMatch(/only 1 colours/);
  });

  test('a page of many colours is drawn; Sub-filtered rows decode the same', () => {
    const plain = pngStats(png(40, 30, busy));
    expect(plain.colours).toBeGreaterThan(64);
    expect(blankReason(plain, 40, 30)).toBeNull();
    expect(pngStats(png(40, 30, busy, 1))).toEqual(plain);
  });

  test('a lone spinner on a background is blank: one colour nearly everywhere', () => {
    const spinner = pngStats(png(100, 100, (x, y) => (x < 9 && y < 9 ? busy(x, y) : [255, 255, 255])));
    expect(spinner.colours).toBeGreaterThanOrEqual(64);
    expect(blankReason(spinner, 100, 100)).toMatch(/one colour covers 99\.\d %/);
  });

  test('the wrong size is reported, and a file that is not a PNG is refused', () => {
    expect(blankReason(pngStats(png(40, 30, busy)), 1400, 1000)).toBe('it is 40×30, not 1400×1000');
    expect(() => pngStats(Buffer.from('<html>not a png</html>'))).toThrow('not a PNG file');
  });
});

describe('the shots', () => {
  test('a page is captured once it shows the run and its state in the history', () => {
    expect(expectedTexts(SHOTS.awaitingApproval)).toEqual(['docs-awaiting-approval', 'Event History', 'Timer Started']);
    expect(SHOTS.paused.status).toBe('paused');
  });

  test('the codec shots: one page, its plaintext shown through the codec and refused without it', () => {
    const decoded = expectedTexts(SHOTS.codecDecoded);
    expect(SHOTS.codecEncrypted.workflowId).toBe(SHOTS.codecDecoded.workflowId);
    // The task, the command and its output: each must be on the decoded page and none on the encrypted one.
    for (const plain of [SHOTS.codecDecoded.shows[0], 'cat total.txt', '"output"']) {
      expect(decoded.some((t) => t.includes(plain) || plain.includes(t))).toBe(true);
      expect(SHOTS.codecEncrypted.hides.some((t) => t.includes(plain) || plain.includes(t))).toBe(true);
    }
    // Nothing the encrypted page must show is plaintext the codec hides.
    for (const shown of SHOTS.codecEncrypted.shows) expect(SHOTS.codecEncrypted.hides).not.toContain(shown);
    expect(windowOf(SHOTS.codecDecoded)).toEqual({ width: 1600, height: 1200 });
    expect(windowOf(SHOTS.paused)).toEqual(SHOT_SIZE);
  });

  test('the crop ends at the row of the given event, and is null without that row', () => {
    const expr = clipToEvent(40);
    expect(expr).toContain('=== "40"');
    const row = (id: string, bottom: number) => ({ cells: [{ innerText: ` ${id} ` }], getBoundingClientRect: () => ({ bottom }) });
    const page = (rows: unknown[]) => ({
      querySelector: () => ({ getBoundingClientRect: () => ({ x: 256, y: 48, width: 1344 }) }),
      querySelectorAll: () => rows,
    });
    const run = (doc: unknown): unknown => runInNewContext(expr, { document: doc });
    expect(run(page([row('4', 300), row('40', 900), row('41', 930)]))).toEqual({ x: 256, y: 48, width: 1344, height: 853 });
    expect(run(page([row('400', 900)]))).toBeNull();
  });

  test('an Update the workflow has no handler for is told from one its validator rejected', () => {
    const failed = (message: string): WorkflowUpdateFailedError =>
      new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.nonRetryable(message));
    expect(isUnknownUpdate(failed('No registered handler for update: pause'))).toBe(true);
    expect(isUnknownUpdate(failed('the run is already paused'))).toBe(false);
    expect(isUnknownUpdate(new Error('No registered handler for update: pause'))).toBe(false);
  });
});
