// Whether a model id is deprecated or retired, from the installed Anthropic SDK's own data:
// the SDK keeps a table of deprecated models and their end-of-life dates (and warns on every
// request to one). `cfh doctor` reports it, so an operator hears before a run fails.
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';

export type ModelStatus = 'current' | 'deprecated' | 'retired' | 'unknown';

export interface ModelLifecycle {
  readonly model: string;
  readonly status: ModelStatus;
  /** The end-of-life day, `YYYY-MM-DD`, when the SDK names one. */
  readonly endOfLife?: string;
  /** Where the answer came from: `@anthropic-ai/sdk <version>`, or why there is none. */
  readonly source: string;
}

const DeprecationTable = z.record(z.string(), z.string());
const SdkPackage = z.object({ name: z.literal('@anthropic-ai/sdk'), version: z.string() });

export interface SdkData {
  readonly version: string;
  readonly deprecated: Readonly<Record<string, string>> | undefined;
}

/**
 * The SDK does not export its table; it lives in internal/data/deprecated-models.js of the
 * installed package. Read by absolute path (package exports do not restrict that), parsed,
 * and absent rather than wrong if a later SDK moves it.
 */
function loadSdkData(): SdkData {
  const require = createRequire(import.meta.url);
  // The package does not export package.json: walk up from its entry point to it.
  let root = path.dirname(require.resolve('@anthropic-ai/sdk'));
  let pkg = SdkPackage.safeParse(undefined);
  for (let i = 0; i < 4 && !pkg.success; i += 1) {
    try {
      pkg = SdkPackage.safeParse(require(path.join(root, 'package.json')));
    } catch {
      // not here
    }
    if (!pkg.success) root = path.dirname(root);
  }
  if (!pkg.success) return { version: 'unknown', deprecated: undefined };
  let deprecated: Record<string, string> | undefined;
  try {
    const mod = z
      .object({ DEPRECATED_MODELS: DeprecationTable })
      .safeParse(require(path.join(root, 'internal', 'data', 'deprecated-models.js')));
    deprecated = mod.success ? mod.data.DEPRECATED_MODELS : undefined;
  } catch {
    deprecated = undefined;
  }
  return { version: pkg.data.version, deprecated };
}

let cached: SdkData | undefined;

/** "November 30th, 2026" → "2026-11-30"; undefined when the SDK's wording is not a date. */
export function parseSdkDate(text: string): string | undefined {
  const ms = Date.parse(`${text.replace(/(\d+)(st|nd|rd|th)\b/, '$1')} 00:00:00 UTC`);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString().slice(0, 10);
}

export function modelLifecycle(
  model: string,
  now: Date = new Date(),
  data: SdkData = (cached ??= loadSdkData()),
): ModelLifecycle {
  const source = `@anthropic-ai/sdk ${data.version}`;
  if (data.deprecated === undefined) {
    return { model, status: 'unknown', source: `${source} keeps no deprecation table` };
  }
  const when = Object.hasOwn(data.deprecated, model) ? data.deprecated[model] : undefined;
  if (when === undefined) return { model, status: 'current', source };
  const endOfLife = parseSdkDate(when);
  if (endOfLife === undefined) return { model, status: 'deprecated', source };
  // Retired from the first moment of its end-of-life day (UTC).
  const retired = now.toISOString().slice(0, 10) >= endOfLife;
  return { model, status: retired ? 'retired' : 'deprecated', endOfLife, source };
}
