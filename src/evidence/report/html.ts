// HTML that is safe by construction: `html` escapes every interpolated value unless it is
// already `Html` (built by `html` itself), so text from a sandbox, a model or a file can
// only ever become text. Attribute values are quoted and escaped the same way; URLs are
// built only by `fileLink` from paths the audit found confined.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

export class Html {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  toString(): string {
    return this.#text;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text as HTML text; C0 controls other than tab and newline shown as `\xHH`. */
export function escapeText(value: string): string {
  return value
    .replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c)
    .replace(
      // Control characters are what this replaces (a terminal escape in command output).
      // eslint-disable-next-line no-control-regex
      /[\u0000-\u0008\u000b-\u001f\u007f]/g,
      (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
    );
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.toString();
  if (Array.isArray(part)) return (part as readonly Part[]).map(render).join('');
  return escapeText(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0] ?? '';
  for (const [i, part] of parts.entries()) out += render(part) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** A link to a file of the run directory; `rel` must be a confined path the audit listed. */
export function fileLink(dir: string, rel: string, label: Part): Html {
  const href = pathToFileURL(path.join(dir, rel)).href;
  return html`<a href="${href}">${label}</a>`;
}

export function bytesText(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
