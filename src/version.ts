import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from './paths.js';

export const CFH_VERSION: string = (
  JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
