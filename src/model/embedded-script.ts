// The embedded default of the scripted gateway: with no ANTHROPIC_API_KEY and no
// --script, an agent run still works offline and says plainly that no language model took
// part. It lists the workspace (through the same validation, mediator and container as any
// call) and answers with that statement.
import { Script } from './scripted-gateway.js';

export const EMBEDDED_SCRIPT_SOURCE = 'embedded-default';

export const EMBEDDED_NOTICE =
  'No language model took part in this run: no ANTHROPIC_API_KEY was set and no --script ' +
  'was given, so cfh replayed its embedded scripted model. It listed the workspace to show ' +
  'the tool path works. Set ANTHROPIC_API_KEY (or give --script FILE) for a real run.';

export const EMBEDDED_SCRIPT: Script = Script.parse({
  model: 'scripted-embedded',
  turns: [{ tool_calls: [{ name: 'list_dir', input: { path: '.' } }] }, { text: EMBEDDED_NOTICE }],
});
