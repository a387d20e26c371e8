// What a client's `session/open` (or `session/restore`) may choose of a session's security:
// the operator's flags and the operator's profile are a floor the client may raise, never
// lower. The client may name another profile, a CFC mode or a workspace mode, but the
// session's CFC mode is at least the operator's `cfh serve --cfc` (else the operator's
// profile's), and its workspace reaches the host no further than the operator's
// `--workspace-mode` (else the operator's profile's). Checked on the plan, before anything
// exists, so a client never holds the operator's word (AH-CFC-15: a mode below the
// profile's is the operator's to choose).
import { CfcMode, cfcStrength } from '../config/cfc-schema.js';
import { WORKSPACE_REACH, WorkspaceMode } from '../config/profile-schema.js';
import { ConfigError } from '../errors.js';

/** The operator's word: `cfh serve`'s flags, and its profile's own settings. */
export interface OperatorFloor {
  readonly cfcFlag: string | undefined;
  readonly workspaceModeFlag: string | undefined;
  readonly profile: { readonly cfcMode: CfcMode; readonly workspaceMode: WorkspaceMode };
}

/** What the session was planned with (the client's choices, checked by planning). */
export interface PlannedSession {
  readonly cfcMode: CfcMode;
  readonly workspaceMode: WorkspaceMode;
}

export function checkSessionFloor(planned: PlannedSession, operator: OperatorFloor): void {
  const flagCfc = CfcMode.safeParse(operator.cfcFlag);
  const cfc = flagCfc.success ? flagCfc.data : operator.profile.cfcMode;
  if (cfcStrength(planned.cfcMode) < cfcStrength(cfc)) {
    const whose = flagCfc.success ? '(cfh serve --cfc)' : "(cfh serve's profile)";
    throw new ConfigError(
      'session_open_weakens',
      `session/open: cfc '${planned.cfcMode}' is weaker than the operator's '${cfc}' ${whose}`,
      { field: 'cfc', value: planned.cfcMode },
      `a session may only strengthen it: ask for cfc '${cfc}' or stronger`,
    );
  }
  const flagWs = WorkspaceMode.safeParse(operator.workspaceModeFlag);
  const ws = flagWs.success ? flagWs.data : operator.profile.workspaceMode;
  if (WORKSPACE_REACH[planned.workspaceMode] > WORKSPACE_REACH[ws]) {
    const whose = flagWs.success ? '(cfh serve --workspace-mode)' : "(cfh serve's profile)";
    throw new ConfigError(
      'session_open_weakens',
      `session/open: workspace mode '${planned.workspaceMode}' reaches further than the operator's '${ws}' ${whose}`,
      { field: 'workspaceMode', value: planned.workspaceMode },
      `a session may only narrow it: ask for '${ws}' or narrower`,
    );
  }
}
