// Parsing a YAML file cfh was given (a profile and each `extends` layer, `--script`,
// `--approvals`) so that a refusal can say where without saying what (AH-INV-4): the yaml
// library's own messages carry an excerpt of the offending lines, so a parse error is
// reported by line, column and the library's error code only, and a validation error
// (zod-issues.ts) is located through the document's nodes. Warnings are never printed.
import { LineCounter, isMap, isScalar, parseDocument, type Document } from 'yaml';

export interface ParsedYaml {
  readonly value: unknown;
  /** `line N, column M` of a path of `value` (or of an unknown key under it). */
  readonly locate: (path: readonly PropertyKey[], unknownKey?: string) => string | undefined;
}

/** A parse failure: where, and the library's error code (no excerpt). */
export class YamlSyntaxError extends Error {
  readonly where: string;
  constructor(where: string, code: string) {
    super(`not valid YAML at ${where} (${code})`);
    this.where = where;
  }
}

export function parseYamlText(text: string, options: { maxAliasCount?: number } = {}): ParsedYaml {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const position = (offset: number): string => {
    const { line, col } = lines.linePos(offset);
    return `line ${line}, column ${col}`;
  };
  const first = doc.errors[0];
  if (first !== undefined) throw new YamlSyntaxError(position(first.pos[0]), first.code);
  let value: unknown;
  try {
    value = doc.toJS(
      options.maxAliasCount === undefined ? {} : { maxAliasCount: options.maxAliasCount },
    );
  } catch {
    // An alias past the count, a cyclic one: the library's message is not repeated.
    throw new YamlSyntaxError('its aliases', 'ALIAS_LIMIT');
  }
  return { value, locate: (path, key) => locate(doc, path, key, position) };
}

function locate(
  doc: Document,
  path: readonly PropertyKey[],
  unknownKey: string | undefined,
  position: (offset: number) => string,
): string | undefined {
  // The deepest node of the path that exists: a missing key is reported at its parent.
  const keys = path.filter((k): k is string | number => typeof k !== 'symbol');
  for (let n = keys.length; n >= 0; n -= 1) {
    const node: unknown = n === 0 ? doc.contents : doc.getIn(keys.slice(0, n), true);
    if (node === null || typeof node !== 'object') continue;
    if (unknownKey !== undefined && n === keys.length && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === unknownKey);
      const range = pair !== undefined && isScalar(pair.key) ? pair.key.range : undefined;
      if (range !== undefined && range !== null) return position(range[0]);
    }
    const range = 'range' in node ? node.range : undefined;
    if (Array.isArray(range) && typeof range[0] === 'number') return position(range[0]);
  }
  return undefined;
}
