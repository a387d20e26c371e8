// Parsing a YAML file cfh was given (a profile and each `extends` layer, `--script`,
// `--approvals`) so that a refusal can say where without saying what (AH-INV-4): the yaml
// library's own messages carry an excerpt of the offending lines, so a parse error is
// reported by line, column and the library's error code only, and a validation error
// (zod-issues.ts) is located through the document's nodes. Warnings are never printed.
import { LineCounter, isMap, isScalar, parseDocument, type Document } from 'yaml';

export interface TextPosition {
  readonly line: number;
  readonly col: number;
}

export interface ParsedYaml {
  readonly value: unknown;
  /** `line N, column M` of a path of `value` (or of an unknown key under it). */
  readonly locate: (path: readonly PropertyKey[], unknownKey?: string) => string | undefined;
  /** The same place as numbers, for `FILE:LINE:COL`. */
  readonly position: (
    path: readonly PropertyKey[],
    unknownKey?: string,
  ) => TextPosition | undefined;
}

/** A parse failure: where, and the library's error code (no excerpt). */
export class YamlSyntaxError extends Error {
  readonly where: string;
  readonly code: string;
  readonly at: TextPosition | undefined;
  constructor(at: TextPosition | undefined, code: string) {
    const where = at === undefined ? 'its aliases' : `line ${at.line}, column ${at.col}`;
    super(`not valid YAML at ${where} (${code})`);
    this.where = where;
    this.code = code;
    this.at = at;
  }

  /** One line: `FILE:LINE:COL: not valid YAML (CODE)`, the file's text never quoted. */
  in(file: string): string {
    const at = this.at === undefined ? '' : `:${this.at.line}:${this.at.col}`;
    return `${file}${at}: not valid YAML (${this.code}${this.at === undefined ? ', its aliases' : ''})`;
  }
}

export function parseYamlText(text: string, options: { maxAliasCount?: number } = {}): ParsedYaml {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const at = (offset: number): TextPosition => {
    const { line, col } = lines.linePos(offset);
    return { line, col };
  };
  const first = doc.errors[0];
  if (first !== undefined) throw new YamlSyntaxError(at(first.pos[0]), first.code);
  let value: unknown;
  try {
    value = doc.toJS(
      options.maxAliasCount === undefined ? {} : { maxAliasCount: options.maxAliasCount },
    );
  } catch {
    // An alias past the count, a cyclic one: the library's message is not repeated.
    throw new YamlSyntaxError(undefined, 'ALIAS_LIMIT');
  }
  const position = (path: readonly PropertyKey[], key?: string): TextPosition | undefined =>
    locate(doc, path, key, at);
  return {
    value,
    position,
    locate: (path, key) => {
      const p = position(path, key);
      return p === undefined ? undefined : `line ${p.line}, column ${p.col}`;
    },
  };
}

function locate(
  doc: Document,
  path: readonly PropertyKey[],
  unknownKey: string | undefined,
  position: (offset: number) => TextPosition,
): TextPosition | undefined {
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
