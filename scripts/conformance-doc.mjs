#!/usr/bin/env node
// Writes docs/conformance.md's generated blocks (every clause table, the audit checks and
// what is not advertised) from conformance/manifest.yaml (npm run conformance-doc; builds
// first). Only what stands between a block's markers is replaced: the prose around them is
// written by hand. test/unit/conformance-manifest.test.ts fails while the two differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { CHECKS } from '../dist/evidence/audit/checks.js';
import { loadManifest } from '../dist/evidence/audit/manifest.js';
import { manifestBlocks, regenerate } from '../dist/evidence/audit/manifest-doc.js';

const doc = new URL('../docs/conformance.md', import.meta.url);
const { text, problems } = regenerate(
  readFileSync(doc, 'utf8'),
  manifestBlocks(loadManifest(), CHECKS),
);
if (problems.length > 0) {
  for (const p of problems) console.error(`conformance-doc: ${p}`);
  process.exit(1);
}
writeFileSync(doc, text);
console.log('conformance-doc: docs/conformance.md written');
