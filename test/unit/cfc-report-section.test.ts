// The HTML report's CFC section (sections-cfc.ts) on the clean enforce-explicit fixture: the
// mode, the label map with the withheld mount, each flow decision, the endorsements and the
// handle minted (id, label, digest; never a value), and observe marked as diagnostic.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEvidence } from '../../src/evidence/audit/audit.js';
import { renderRunReport } from '../../src/evidence/report/render-report.js';
import { cfcSection } from '../../src/evidence/report/sections-cfc.js';
import { cleanRun, snapshotCfc, snapshotOf } from './cfc-audit-fixture.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-cfc-report-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the CFC section of the report', () => {
  it('shows the mode, the label map, flows, endorsements and handles', async () => {
    const run = { ...cleanRun(), dir };
    const page = await renderRunReport(run, auditEvidence(run));
    // CFH_REPORT_OUT: keep the page to look at it (a screenshot at 1280 and 420 px).
    if (process.env.CFH_REPORT_OUT !== undefined) await writeFile(process.env.CFH_REPORT_OUT, page);
    const part = cfcSection(run).toString();
    expect(page).toContain('<section id="cfc">');
    expect(part).toContain('enforce-explicit (enforced)');
    expect(part).toMatch(
      /\/secrets[\s\S]*c\[secret\][\s\S]*withheld: the workspace is not cleared/,
    );
    expect((part.match(/class="cfc-flow"/g) ?? []).length).toBe(3);
    expect(part).toMatch(/cfc:integrity[\s\S]*its influence lacks \[prompt:direct\]/);
    expect(part).toMatch(/declassify[\s\S]*\[secret\][\s\S]*op at the tty/);
    expect(part).toMatch(
      /cfh-val:abcdefghijklmnopqrst[\s\S]*call-0002[\s\S]*c\[secret\][\s\S]*counts[\s\S]*call-0003/,
    );
  });

  it('lists each env value that is a source, by name and label, never a value', () => {
    const env = [
      {
        name: 'DEPLOY_TOKEN',
        label: { confidentiality: ['secret'], integrity: [] },
        labelSource: 'flag',
        inWorkload: false,
        withheldBecause: 'its confidentiality [secret] is not cleared for /workspace (rw)',
      },
      { name: 'OTHER', label: null, labelSource: 'profile', inWorkload: true },
    ];
    const run = cleanRun({ snapshot: snapshotOf(snapshotCfc('enforce-explicit', { env })) });
    const part = cfcSection(run).toString();
    expect(part).toMatch(
      /env DEPLOY_TOKEN[\s\S]*c\[secret\][\s\S]*withheld: its confidentiality \[secret\]/,
    );
    expect(part).toMatch(/env OTHER[\s\S]*unlabelled[\s\S]*yes/);
  });

  it('marks observe as diagnostic, not enforcement; says so when nothing is recorded', () => {
    const observe = cleanRun({ snapshot: snapshotOf(snapshotCfc('observe')), mode: 'observe' });
    expect(cfcSection(observe).toString()).toContain('observe: diagnostic, not enforcement');
    const before = {
      ...cleanRun({ events: [], snapshot: snapshotOf(null) }),
      report: { present: false, value: undefined },
    };
    expect(cfcSection(before).toString()).toContain('a run from before CFC');
  });
});
