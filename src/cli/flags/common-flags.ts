// Flags several commands take, declared once so their spelling and help never drift.
import { defaultedFlag, switchFlag, valueFlag } from './flag.js';

export const JSON_FLAG = switchFlag('--json', 'machine-readable');

export const PROFILE_FLAG = defaultedFlag(
  '--profile <name|file>',
  'built-in profile name or profile file',
  'default',
);

export const ARTIFACT_ROOT_FLAG = valueFlag(
  '--artifact-root <dir>',
  'where run directories are (default: $CFH_ARTIFACT_ROOT or ~/.local/state/cfh/runs)',
);
