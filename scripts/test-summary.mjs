// Prints vitest's totals as one plain closing line ("tests: N passed, N failed, N skipped")
// from its JSON report, so any reader of the log sees the count, not just the exit code.
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2] ?? '.cache/vitest.json', 'utf8'));
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(
  `tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped`,
);
process.exitCode =
  report.numTotalTests > 0 && report.numFailedTests === 0 && report.success ? 0 : 1;
