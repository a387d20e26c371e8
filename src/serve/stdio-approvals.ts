// Approvals asked of the caller (`cfh serve --stdio`): each call policy asks about becomes an
// `approval/request` sent to the client, answered by its response or by `approval/answer`.
// The answer is bound to the call's args digest, as at the terminal: an answer naming another
// digest approves nothing. "rule" approves the rule for the rest of the session (never for a
// call that needs stronger authentication, which is approved one call at a time). The
// approver recorded is the OS user of cfh serve at the surface `stdio`.
import type { ApprovalAnswer, ApprovalRequest, ApprovalSource } from '../mediator/approvals.js';
import { ApprovalResult } from './protocol.js';
import type { LinePeer } from './rpc.js';

export class StdioApprovals implements ApprovalSource {
  readonly surface = 'stdio' as const;
  readonly user: string;
  readonly #peer: LinePeer;
  readonly #sessionId: () => string;
  readonly #rules = new Set<string>();

  constructor(peer: LinePeer, user: string, sessionId: () => string) {
    this.#peer = peer;
    this.user = user;
    this.#sessionId = sessionId;
  }

  async answer(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer | undefined> {
    const approver = { kind: 'human', user: this.user, surface: 'stdio' } as const;
    const strong = request.decision === 'require_stronger_auth';
    if (!strong && this.#rules.has(request.rule)) return { granted: true, approver, scope: 'rule' };
    const raw = await this.#peer.request(
      'approval/request',
      {
        sessionId: this.#sessionId(),
        callId: request.callId,
        tool: request.tool.name,
        args: request.args,
        argsDigest: request.argsDigest,
        decision: request.decision,
        rule: request.rule,
        reason: request.reason,
        answers: strong ? ['once', 'deny'] : ['once', 'rule', 'deny'],
      },
      signal,
    );
    const parsed = ApprovalResult.safeParse(raw);
    if (!parsed.success)
      return { granted: false, approver, why: 'the answer was not an approval answer' };
    const a = parsed.data;
    if (a.argsDigest !== request.argsDigest)
      return {
        granted: false,
        approver,
        why: 'the answer names another call (args digest differs)',
      };
    if (a.answer === 'deny')
      return { granted: false, approver, why: a.why ?? 'denied by the caller' };
    if (a.answer === 'rule' && strong)
      return {
        granted: false,
        approver,
        why: 'stronger authentication is approved one call at a time',
      };
    if (a.answer === 'rule') this.#rules.add(request.rule);
    return { granted: true, approver, scope: a.answer === 'rule' ? 'rule' : 'call' };
  }
}
