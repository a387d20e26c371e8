// The run's evidence as MCP resources (`cfh mcp`), read-only: the snapshot, the event log,
// the governance records while the run is live, and report.json once it is written (it is
// written when the run ends, after the connection closed, so a live session lists it but
// reading it says it is not there yet). Nothing else of the artifact root is reachable: the
// URI names one of these files of this run, or it is refused.
import { readFile, stat } from 'node:fs/promises';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { RunEvidence } from './mcp-calls.js';

const FILES = {
  'snapshot.json': { mimeType: 'application/json', description: 'the run-start configuration' },
  'events.jsonl': {
    mimeType: 'application/x-ndjson',
    description: "the run's hash-chained events",
  },
  'governance.jsonl': {
    mimeType: 'application/x-ndjson',
    description: 'one governance record per proposed call',
  },
  'report.json': {
    mimeType: 'application/json',
    description: "the run's report (written when the run ends)",
  },
} as const;

/** The most of one file a read returns; a longer event log is cut, and says so. */
export const RESOURCE_READ_CAP = 4 * 1024 * 1024;

export function resourceUri(runId: string, file: string): string {
  return `cfh://run/${runId}/${file}`;
}

export function listResources(evidence: RunEvidence | undefined): {
  uri: string;
  name: string;
  mimeType: string;
  description: string;
}[] {
  if (evidence === undefined) return [];
  return Object.entries(FILES).map(([file, f]) => ({
    uri: resourceUri(evidence.runId, file),
    name: file,
    mimeType: f.mimeType,
    description: f.description,
  }));
}

export async function readResource(
  evidence: RunEvidence | undefined,
  uri: string,
): Promise<{ contents: { uri: string; mimeType: string; text: string }[] }> {
  const file =
    evidence === undefined
      ? undefined
      : Object.keys(FILES).find((f) => uri === resourceUri(evidence.runId, f));
  if (evidence === undefined || file === undefined) {
    throw new McpError(ErrorCode.InvalidParams, `unknown resource: ${uri.slice(0, 200)}`);
  }
  const at = evidence.path(file);
  const size = await stat(at).then(
    (s) => s.size,
    () => undefined,
  );
  if (size === undefined)
    throw new McpError(ErrorCode.InvalidParams, `${file}: not written yet (the run is live)`);
  const body = await readFile(at);
  const text = body.subarray(0, RESOURCE_READ_CAP).toString('utf8');
  const mimeType = FILES[file as keyof typeof FILES].mimeType;
  return {
    contents: [
      {
        uri,
        mimeType,
        text:
          body.length > RESOURCE_READ_CAP
            ? `${text}\n[cut: ${body.length} bytes, the first ${RESOURCE_READ_CAP} shown]`
            : text,
      },
    ],
  };
}
