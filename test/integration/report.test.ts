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
import { stringify } from 'yaml';
import { agentRunArgs, cfh, onlyRunDir, REPO_ROOT, useScratch } from './helpers.js';
import { MEMORY_SERVER, NODE, profileFile, scriptFile } from './host-tools-support.js';
import { HOSTILE_OUTPUT, makeAuditFixtures, type AuditFixtures } from './audit-fixtures.js';
import { launchBrowser, type TestBrowser } from './browser.js';

const scratch = useScratch('report');
let fx: AuditFixtures;
let browser: TestBrowser;

beforeAll(async () => {
  fx = await makeAuditFixtures(scratch);
  browser = await launchBrowser();
  // An agent run with a host tool (an MCP server on the host) that answers one call.
  const profile = await profileFile(scratch, 'host', {
    hostTools: [
      {
        name: 'memory',
        kind: 'mcp',
        command: NODE,
        args: [MEMORY_SERVER],
        env: { MEMORY_FILE_PATH: { value: scratch.path('graph.jsonl') } },
        tools: [{ name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' }],
      },
    ],
  });
  const script = await scriptFile(scratch, 'host', [
    [{ name: 'mcp__memory__read_graph', input: {} }],
  ]);
  const root = scratch.path('art-host');
  const r = await cfh(
    agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
  );
  expect(r.exitCode, r.stderr).toBe(0);
  hostToolsRun = await onlyRunDir(root);
  childrenRun = await runWithChildren();
});

/** A parent that delegates twice: one child returns markup in its answer, one fails. */
async function runWithChildren(): Promise<string> {
  const profile = await profileFile(scratch, 'parent', {
    tools: ['read_file', 'list_dir'],
    budgets: { maxModelTurns: 10, maxParallelChildren: 3 },
    children: {
      reviewer: {
        description: 'reads the workspace',
        tools: ['read_file', 'list_dir'],
        workspace: { mode: 'ro' },
        budgets: { maxModelTurns: 3, maxToolCalls: 4 },
        returns: { schema: { type: 'object', required: ['verdict'] } },
      },
      broken: { description: 'fails', tools: ['list_dir'], budgets: { maxModelTurns: 2 } },
    },
  });
  const listDir = { name: 'list_dir', input: { path: '.' } };
  const script = await scratch.file(
    'parent.script.yaml',
    stringify({
      turns: [
        {
          tool_calls: [
            { name: 'delegate', input: { profile: 'reviewer', task: 'review' } },
            { name: 'delegate', input: { profile: 'broken', task: 'x' } },
          ],
        },
        { text: 'parent done' },
      ],
      children: {
        reviewer: { turns: [{ tool_calls: [listDir] }, { text: '{"verdict": "<b>ok</b>"}' }] },
        broken: { turns: [{ tool_calls: [listDir] }] },
      },
    }),
  );
  const root = scratch.path('art-children');
  const r = await cfh(
    agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
  );
  expect(r.exitCode, r.stderr).toBe(0);
  return onlyRunDir(root);
}
afterAll(async () => {
  await browser.close();
  for (const s of fx.servers) await s.close();
});

const SECTIONS = [
  'identity',
  'prompt',
  'profile',
  'bounds',
  'containers',
  'resources',
  'tool-calls',
  'host-tools',
  'egress',
  'approvals',
  'usage',
  'children',
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
  /** By viewport width: the words of table cells (not digests, paths, data) split across lines. */
  readonly midWord: Readonly<Record<string, string[]>>;
}

/**
 * Every word of a table cell's own text (outside \`.any\`: digests, paths and data may break)
 * that the browser laid out on more than one line: each word's range has one client rect
 * per line it occupies. A hyphen is a break opportunity, so the parts between are words.
 */
const BROKEN_WORDS = `(() => {
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) {
    const el = n.parentElement;
    if (el === null || el.closest('td, th') === null || el.closest('.any, pre') !== null) continue;
    const re = /[^\\s-]+/g;
    for (let m = re.exec(n.data); m !== null; m = re.exec(n.data)) {
      const range = document.createRange();
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (tops.size > 1) broken.push(m[0]);
    }
  }
  return broken;
})()`;

type Kind = keyof Omit<AuditFixtures, 'keyDir' | 'servers'> | 'hostTools' | 'children';
let hostToolsRun = '';
let childrenRun = '';

async function open(kind: Kind): Promise<Opened> {
  const file = scratch.path(`${kind}.html`);
  // The signed run is reported where its key is trusted; the others where no key is set.
  const keyDir = kind === 'signedCommand' ? fx.keyDir : scratch.path('no-keys');
  const dir = kind === 'hostTools' ? hostToolsRun : kind === 'children' ? childrenRun : fx[kind];
  const r = await cfh(['runs', 'report', dir, '--out', file], {
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
  await mkdir(path.join(REPO_ROOT, '.cache'), { recursive: true });
  // Desktop, then narrow (a phone, a side panel): no text may be broken inside a word.
  const midWord: Record<string, string[]> = {};
  for (const [label, width] of [
    ['', 1280],
    ['-narrow', 420],
  ] as const) {
    await page.setViewportSize({ width, height: 1000 });
    await page.screenshot({
      path: path.join(REPO_ROOT, '.cache', `report-${kind}${label}.png`),
      fullPage: true,
    });
    midWord[width] = await page.evaluate(BROKEN_WORDS);
  }
  const pwned: unknown = await page.evaluate('window.__pwned');
  return {
    file,
    requests,
    pwned,
    midWord,
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
  // Normal text wraps at words at every width (a break inside a word is only for ids).
  expect(o.midWord).toEqual({ 1280: [], 420: [] });
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
    // Limits in the units people read; what the container used, from its cgroup.
    const bounds = await o.text('section#bounds');
    expect(bounds).toMatch(/memory\s+1 GiB/);
    expect(bounds).toMatch(/CPU\s+1 CPU/);
    expect(bounds).toMatch(/processes\s+256 pids/);
    expect(bounds).toMatch(/wall time\s+10 min/);
    expect(bounds).toMatch(/output kept per stream\s+8 MiB/);
    expect(bounds).toMatch(/standard/);
    expect(await o.count('tr.resource')).toBe(1);
    expect(await o.text('section#resources')).toMatch(/\d+(\.\d)? (KiB|MiB)\s+\d+(\.\d+)? m?s/);
    expect(await o.text('section#host-tools')).toMatch(/None/);
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
    // Budgets in units: seconds as time, tokens and characters counted.
    const bounds = await o.text('section#bounds');
    expect(bounds).toMatch(/max wall time seconds\s+\d+(\.\d+)? (s|min)/);
    expect(bounds).toMatch(/max input tokens\s+[\d,]+ tokens/);
    // Each tool container's usage, and the total.
    expect(await o.count('tr.resource')).toBeGreaterThanOrEqual(1);
    expect(await o.count('tr.resource-total')).toBe(1);
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
    // One row per approval asked: call, tool, rule, answer, who at which surface, when.
    expect(await o.count('tr.approval')).toBe(2);
    const approvals = await o.text('section#approvals');
    expect(approvals).toMatch(
      /call-\d+\s+exec\s+rm-needs-approval\s+granted[^\n]*\s+\S+ at the flag\s+20\d\d-\S+\s+\d/,
    );
    expect(approvals).toMatch(/touch\S*\s+unavailable\s+nobody/);
    expect(await o.text('section#tool-calls')).toMatch(/denied: touch-needs-strong-auth/);
  });

  it('a host-tools run: each host tool with its program, pins, calls and outcomes', async () => {
    const o = await open('hostTools');
    inert(o);
    expect(await o.count('tr.host-tool')).toBe(1);
    const host = await o.text('section#host-tools');
    expect(host).toMatch(/outside the sandbox/);
    expect(host).toMatch(/memory\s+mcp\s+\S*node/);
    expect(host).toMatch(/sha256:[0-9a-f]{64}/);
    expect(host).toMatch(/\t1\tsuccess 1/);
    expect(await o.text('#assurance-level')).toBe('reduced');
  });

  it('a run with children: each child with its state, outcome, budget and return, as text', async () => {
    const o = await open('children');
    inert(o);
    expect(await o.count('section#children tr.child')).toBe(2);
    const children = await o.text('section#children');
    expect(children).toMatch(/reviewer\s+call-0001[\s\S]*completed \(final_answer\)\s+returned/);
    expect(children).toMatch(
      /broken\s+call-0002[\s\S]*failed \(error:script_exhausted\)\s+failed\s+child_failed/,
    );
    expect(children).toMatch(/turns 2 \/ 3\s+tool calls 1 \/ 4/);
    expect(children).toMatch(/child_failed: child broken ended failed/);
    // The child's answer is text: its markup is shown, no element of it exists.
    expect(await o.text('section#children pre.child-return')).toBe('{"verdict":"<b>ok</b>"}');
    expect(await o.count('section#children b')).toBe(0);
    const body = await readFile(o.file, 'utf8');
    expect(body).toContain('&quot;&lt;b&gt;ok&lt;/b&gt;&quot;');
    // Each child's directory linked, under the parent's.
    expect(await o.count('section#children tr.child a[href*="/children/"]')).toBe(2);
    expect(await o.text('#usage-with-descendants')).toMatch(
      /descendants\s+3\s+2[\s\S]*this run with its descendants\s+5\s+4/,
    );
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
