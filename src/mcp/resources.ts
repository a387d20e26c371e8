// What `cfh mcp` offers its client as resources. The client is the model side (it proposes
// the calls), so it is given only what an agent run shows its model: which run this is, the
// tools it may call, the CFC mode they are judged under, and how the client itself was
// recorded. The run's evidence (snapshot, events, governance records, report) is the
// operator's: it holds the label map, handle records, digests and raw decisions that would
// answer questions about values the client was never shown (AH-CFC-17/19), so it is read
// with `cfh runs show` / `cfh audit`, never served here. One resource, read-only; any other
// URI is refused.
import { readFile } from 'node:fs/promises';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { RUN_FILES } from '../evidence/run-directory.js';
import type { RunEvidence } from './mcp-calls.js';

const RUN_RESOURCE = 'run.json';

/** The fields of the snapshot a model-side client may see, and nothing else of it. */
const ModelSideView = z.looseObject({
  runId: z.string(),
  profile: z.looseObject({ name: z.string() }),
  tools: z.array(z.string()),
  modelSide: z.unknown().optional(),
  cfc: z.looseObject({ mode: z.string() }).optional(),
  workspace: z.looseObject({ mode: z.string() }).optional(),
});

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
  return [
    {
      uri: resourceUri(evidence.runId, RUN_RESOURCE),
      name: RUN_RESOURCE,
      mimeType: 'application/json',
      description:
        "this session: the run id, the tools you may call, the CFC mode; the evidence is the operator's (cfh runs show)",
    },
  ];
}

export async function readResource(
  evidence: RunEvidence | undefined,
  uri: string,
): Promise<{ contents: { uri: string; mimeType: string; text: string }[] }> {
  if (evidence === undefined || uri !== resourceUri(evidence.runId, RUN_RESOURCE))
    throw new McpError(ErrorCode.InvalidParams, `unknown resource: ${uri.slice(0, 200)}`);
  let snapshot: z.infer<typeof ModelSideView>;
  try {
    const parsed = ModelSideView.safeParse(
      JSON.parse(await readFile(evidence.path(RUN_FILES.snapshot), 'utf8')),
    );
    if (!parsed.success) throw new Error('not a run snapshot');
    snapshot = parsed.data;
  } catch {
    throw new McpError(ErrorCode.InternalError, `${RUN_RESOURCE}: the run's start is not readable`);
  }
  const view = {
    runId: snapshot.runId,
    profile: snapshot.profile.name,
    tools: snapshot.tools,
    workspaceMode: snapshot.workspace?.mode ?? null,
    cfcMode: snapshot.cfc?.mode ?? 'disabled',
    modelSide: snapshot.modelSide ?? null,
    evidence: `the operator reads it: cfh runs show ${snapshot.runId}`,
  };
  return {
    contents: [{ uri, mimeType: 'application/json', text: `${JSON.stringify(view, null, 2)}\n` }],
  };
}
