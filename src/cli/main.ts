#!/usr/bin/env node
// The entry point. `cfh --version` is asked by people and agents alike before anything
// else, so it is answered here without loading the CLI (commander, the engine client, the
// schemas): the rest is imported only for a command (run-main.ts). With run-main.ts, the
// only place that touches process exit.
import './node-check.js';
import { CFH_VERSION } from '../version.js';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${CFH_VERSION}\n`);
} else {
  await import('./compile-cache.js');
  await import('./run-main.js');
}
