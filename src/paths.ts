// Where cfh's own data lives: the package root holds profiles/, images/ and seccomp/.
// This file sits one directory below the root both in src/ and in dist/.
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const PACKAGE_ROOT = fileURLToPath(new URL('../', import.meta.url));
export const BUILTIN_PROFILES_DIR = path.join(PACKAGE_ROOT, 'profiles');
export const IMAGES_DIR = path.join(PACKAGE_ROOT, 'images');
export const SECCOMP_DIR = path.join(PACKAGE_ROOT, 'seccomp');
