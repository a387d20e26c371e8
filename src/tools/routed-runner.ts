// One executor kind served by several runners, by tool name: the `host` executor runs the
// host-tool channel's tools and cfh's own host-side tools (delegate) alike. A name no runner
// claims is the fallback's; with none, the call is a harness fault.
import { HarnessInvariantError } from '../errors.js';
import type { AuthorizedCall } from '../mediator/mediator.js';
import type { ToolOutcome, ToolRunner } from './runner.js';

export class RoutedRunner implements ToolRunner {
  readonly #byName: ReadonlyMap<string, ToolRunner>;
  readonly #fallback: ToolRunner | undefined;

  constructor(byName: ReadonlyMap<string, ToolRunner>, fallback: ToolRunner | undefined) {
    this.#byName = byName;
    this.#fallback = fallback;
  }

  run(call: AuthorizedCall, limitChars: number, signal: AbortSignal): Promise<ToolOutcome> {
    const runner = this.#byName.get(call.tool.name) ?? this.#fallback;
    if (runner === undefined)
      return Promise.reject(
        new HarnessInvariantError('unauthorized_call', `no runner for ${call.tool.name}`, {
          tool: call.tool.name,
        }),
      );
    return runner.run(call, limitChars, signal);
  }
}
