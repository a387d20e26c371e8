// What a client's `session/open` (or `session/restore`) may choose of a session's security:
// the operator's flags and the profile are a floor the client may raise, never lower. A
// session's CFC mode is the operator's `cfh serve --cfc`, else the profile's; the client may
// ask for a stronger one (observe → enforce-explicit → enforce-strict), and a weaker one is
// refused before anything exists, so a client never holds the operator's word on
// information flow (AH-CFC-15: a mode below the profile's is the operator's to choose).
import { CfcMode, strongerCfcMode } from '../config/cfc-schema.js';
import { ConfigError } from '../errors.js';

/**
 * `planned`: the mode the session was planned with (the client's, checked by planning);
 * `operator`: `cfh serve --cfc`, if given; `profile`: the chosen profile's own mode.
 */
export function checkSessionCfc(
  asked: string | undefined,
  planned: CfcMode,
  floor: { readonly operator: string | undefined; readonly profile: CfcMode },
): void {
  if (asked === undefined) return;
  const operator = CfcMode.safeParse(floor.operator);
  const base = operator.success ? operator.data : floor.profile;
  if (strongerCfcMode(planned, base) === planned) return;
  const whose = operator.success ? "the operator's (cfh serve --cfc)" : "the profile's";
  throw new ConfigError(
    'session_open_weakens',
    `session/open: cfc '${planned}' is weaker than ${whose} '${base}'`,
    { field: 'cfc', value: planned },
    `a session may only strengthen it: ask for '${base}' or stronger, or leave cfc out`,
  );
}
