// The JSON the editors' and agents' settings are written in (host-obeyed-named-agents.ts,
// host-obeyed-named-editors.ts), read without a JSONC library: VS Code, Zed, Cursor, Roo and
// opencode read their settings as JSON with comments (`//`, `/* */`) and trailing commas, and
// a project's `.vscode/settings.json` usually has both; Claude Code and Gemini CLI read plain
// JSON, of which this is a superset. A file that still does not parse names nothing (its tool
// refuses it too, so what it names is never run).

/** The text with comments outside strings blanked and a comma before `}` or `]` dropped. */
function strip(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (c === '"') {
      // A string, escapes kept, copied whole: a `//` inside it (a URL) is not a comment.
      const m = /^"(?:[^"\\\n]|\\.)*"?/.exec(text.slice(i));
      const s = m?.[0] ?? c;
      out += s;
      i += s.length;
    } else if (text.startsWith('//', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
    } else if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
      out += ' ';
    } else {
      out += c;
      i += 1;
    }
  }
  // A string is matched whole so that a `,]` inside one stays.
  return out.replace(/"(?:[^"\\\n]|\\.)*"|,(\s*[}\]])/g, (m, close?: string) => close ?? m);
}

/** The document, or undefined when it does not parse. */
export function jsonc(text: string): unknown {
  try {
    return JSON.parse(strip(text.replace(/^\uFEFF/, '')));
  } catch {
    return undefined;
  }
}

/**
 * The variables these tools replace by the directory they run in (the project): VS Code's
 * and Cursor's `${workspaceFolder}` (`${workspaceRoot}` its old name, `${workspaceFolder:x}`
 * in a multi-root workspace), the `$CLAUDE_PROJECT_DIR` Claude Code gives its hooks (Gemini
 * CLI gives `$GEMINI_PROJECT_DIR` and the Claude name; Qwen Code, its fork, `$QWEN_PROJECT_DIR`),
 * Zed's `$ZED_WORKTREE_ROOT`. Each becomes `.`, the directory the value is resolved against
 * (quotes around the variable alone dropped: `"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`).
 * Any other variable stays, and a value with one names nothing held (host-obeyed-named.ts).
 */
export function projectDir(value: string): string {
  const name = String.raw`\$\{workspace(?:Folder|Root)(?::[^}]*)?\}|\$(?:\{(?:(?:CLAUDE|GEMINI|QWEN)_PROJECT_DIR|ZED_WORKTREE_ROOT)\}|(?:(?:CLAUDE|GEMINI|QWEN)_PROJECT_DIR|ZED_WORKTREE_ROOT)(?!\w))`;
  return value.replace(new RegExp(`"(?:${name})"|'(?:${name})'|(?:${name})`, 'g'), '.');
}
