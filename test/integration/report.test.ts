// `cfh runs report` in a real browser: headless Chromium (Debian's chromium, driven by
// playwright-core) opens the page of real runs of each kind from a file URL. The DOM holds
// the run's facts section by section; nothing the hostile runs put in their evidence (a
// command printing HTML and script, DNS names carrying markup, a model answer with a
// script tag, a tool call's output) runs or loads; the page makes no network request.
// Screenshots are kept under .cache/report-*.png for people to look at.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cfh, REPO_ROOT, useScratch } from './helpers.js';
import { HOSTILE_OUTPUT, makeAuditFixtures, type AuditFixtures } from './audit-fixtures.js';
import { launchBrowser, type TestBrowser } from './browser.js';

const scratch = useScratch('report');
let fx: AuditFixtures;
let browser: TestBrowser;

beforeAll(async () => {
  fx = await makeAuditFixtures(scratch);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser.close();
  for (const s of fx.servers) await s.close();
});

const SECTIONS = [
  'identity',
  'prompt',
  'profile',
  'containers',
  'tool-calls',
  'egress',
  'approvals',
  'usage',
  'audit',
  'outcome',
  'timeline',
];

interface Opened {
  readonly file: string;
  readonly requests: string[];
  /** What a reader sees (innerText: closed details hidden, cells tab-separated). */
  readonly text: (selector: string) => Promise<string>;
  /** Every character of the element's text, collapsed parts included (textContent). */
  readonly source: (selector: string) => Promise<string>;
  readonly count: (selector: string) => Promise<number>;
  readonly pwned: unknown;
  readonly dialogs: number;
}

async function open(kind: keyof Omit<AuditFixtures, 'keyDir' | 'servers'>): Promise<Opened> {
  const file = scratch.path(`${kind}.html`);
  // The signed run is reported where its key is trusted; the others where no key is set.
  const keyDir = kind === 'signedCommand' ? fx.keyDir : scratch.path('no-keys');
  const r = await cfh(['runs', 'report', fx[kind], '--out', file], {
    env: { CFH_KEY_DIR: keyDir },
  });
  expect(r.exitCode, r.stderr).toBe(0);
  const page = await browser.context.newPage();
  const requests: string[] = [];
  let dialogs = 0;
  page.on('request', (req) => requests.push(req.url()));
  page.on('dialog', (d) => {
    dialogs += 1;
    void d.dismiss();
  });
  await page.goto(pathToFileURL(file).href);
  await page.waitForLoadState('load');
  await page.setViewportSize({ width: 1280, height: 1000 });
  await mkdir(path.join(REPO_ROOT, '.cache'), { recursive: true });
  await page.screenshot({
    path: path.join(REPO_ROOT, '.cache', `report-${kind}.png`),
    fullPage: true,
  });
  const pwned: unknown = await page.evaluate('window.__pwned');
  return {
    file,
    requests,
    pwned,
    get dialogs() {
      return dialogs;
    },
    text: (selector) => page.locator(selector).first().innerText(),
    source: async (selector) => (await page.locator(selector).first().textContent()) ?? '',
    count: (selector) => page.locator(selector).count(),
  };
}

function inert(o: Opened): void {
  // The page itself is the only thing loaded: no image, frame, font or fetch.
  expect(o.requests).toEqual([pathToFileURL(o.file).href]);
  expect(o.pwned).toBeUndefined();
  expect(o.dialogs).toBe(0);
}

describe('cfh runs report, opened in Chromium', () => {
  it('a command run whose output is HTML and script: shown as text, nothing runs', async () => {
    const o = await open('command');
    inert(o);
    for (const id of SECTIONS) expect(await o.count(`section#${id}`), id).toBe(1);
    // Markup from the sandbox is text: no element the output spelled exists.
    expect(await o.count('script')).toBe(0);
    expect(await o.count('img')).toBe(0);
    expect(await o.count('a[href^="javascript:"]')).toBe(0);
    const outcome = await o.source('section#outcome');
    expect(outcome).toContain('<script>window.__pwned=1</script>');
    expect(outcome).toContain('onerror="window.__pwned=2"');
    expect(outcome).toContain('\\x1b[31m');
    expect(HOSTILE_OUTPUT).toContain('\x1b[31m');
    expect(await o.text('section#identity')).toContain(path.basename(fx.command));
    expect(await o.text('section#containers')).toMatch(/no-new-privileges\s+true/);
    expect(await o.text('section#outcome')).toMatch(/completed/);
    // A raw-file link for each output, into the run directory.
    expect(await o.count('section#outcome details.output a[href^="file://"]')).toBe(2);
  });

  it('an agent run: prompt slots, every tool call with its decision, usage with provenance, the answer as text', async () => {
    const o = await open('agent');
    inert(o);
    expect(await o.count('tr.tool-call')).toBe(5);
    const calls = await o.text('section#tool-calls');
    const callOutputs = await o.source('section#tool-calls');
    expect(calls).toMatch(/call-0003\s+send_email[\s\S]*rejected: unknown_tool/);
    expect(calls).toMatch(/call-0004\s+read_file[\s\S]*rejected: invalid_arguments/);
    expect(calls).toMatch(/call-0005\s+exec[\s\S]*run_in_sandbox\s+\S+/);
    expect(callOutputs).toContain('<img src=x onerror="window.__pwned=2">');
    expect(await o.text('section#prompt')).toMatch(/direct command\s+15\s+sha256:[0-9a-f]{64}/);
    const usage = await o.text('section#usage');
    expect(usage).toMatch(/turn-1\s+scripted\s+scripted-audit\s+100\s+10\s+not reported/);
    expect(usage).toMatch(
      /not a charge: total omitted \(incomplete_coverage\); rate card rate-cards\/anthropic\.json/,
    );
    expect(await o.text('#final-answer')).toBe('Done. <script>window.__pwned=3</script>');
    expect(await o.count('section#audit tr.verdict')).toBeGreaterThan(20);
    expect(await o.text('#audit-summary')).toMatch(/Nothing fails/);
  });

  it('a network run: every egress attempt with its decision, the markup-laden DNS name as text', async () => {
    const o = await open('network');
    inert(o);
    const egress = await o.text('section#egress');
    expect(await o.source('section#egress')).toContain('onerror');
    expect(egress).toMatch(/allow\s+(http|dns)[\s\S]*api\.audit\.test/);
    expect(egress).toMatch(/deny[\s\S]*denied\.audit\.test[\s\S]*denylisted/);
    expect(egress).toContain('<img src=x onerror=window.__pwned=5>.audit.test');
    expect(await o.count('img')).toBe(0);
  });

  it('an approval run: each approval asked and answered, in the approvals section', async () => {
    const o = await open('approval');
    inert(o);
    // rm asked and granted (--approve); touch asked, with nobody to answer.
    expect(await o.count('tr.approval')).toBe(4);
    const approvals = await o.text('section#approvals');
    expect(approvals).toMatch(/approval_requested[\s\S]*rm-needs-approval/);
    expect(approvals).toMatch(/approval_received[\s\S]*"outcome":"granted"/);
    expect(approvals).toMatch(/"outcome":"unavailable"/);
    expect(await o.text('section#tool-calls')).toMatch(/denied: touch-needs-strong-auth/);
  });

  it('the page is self-contained: no external reference, a CSP that forbids scripts and loads', async () => {
    const body = await readFile(scratch.path('agent.html'), 'utf8').catch(async () => {
      await open('agent');
      return readFile(scratch.path('agent.html'), 'utf8');
    });
    expect(body).toMatch(/Content-Security-Policy" content="default-src &#39;none&#39;/);
    // Only the page's own elements: none that loads or runs anything.
    expect(body).not.toMatch(/<(script|link|img|iframe|object|embed|frame|audio|video|source)\b/i);
    expect(body).not.toMatch(/<[a-z][^>]*\s(src|srcset|action|formaction)=/i);
    expect(body).not.toMatch(/https?:\/\//i);
    expect((await stat(scratch.path('agent.html'))).size).toBeLessThan(512 * 1024);
  });

  it('refuses to write the page into the run directory', async () => {
    const r = await cfh([
      'runs',
      'report',
      fx.command,
      '--out',
      path.join(fx.command, 'report.html'),
    ]);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/inside the run directory/);
  });
});
