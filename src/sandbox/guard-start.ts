// Starting the egress guard: its own process installs the netfilter rules and says
// GUARD_READY once they are committed (guard-rules.ts); only then may anything start in
// its namespace. The same process then answers original-destination lookups.
import { EngineError } from '../errors.js';
import { GUARD_READY } from '../network/guard-rules.js';
import type { CreatedGuard, GuardProcess } from '../substrate/runtime.js';

const MAX_REPORT_CHARS = 500;

/** Starts the guard; resolves with its process once the rules are in force, else throws. */
export async function startGuard(guard: CreatedGuard, signal?: AbortSignal): Promise<GuardProcess> {
  const proc = await guard.start(signal);
  const line = `${GUARD_READY}\n`;
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const finish = (error?: Error): void => {
      proc.stdout.off('data', onData);
      proc.stdout.off('end', onEnd);
      signal?.removeEventListener('abort', onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString('utf8');
      const at = seen.indexOf(line);
      if (at < 0) return;
      proc.stdout.pause();
      const rest = seen.slice(at + line.length);
      // Whatever followed the line belongs to the lookups' reader.
      if (rest.length > 0) proc.stdout.unshift(Buffer.from(rest, 'utf8'));
      finish();
    };
    // The script stopped before its last step: the rules are not (all) in force.
    const onEnd = (): void => {
      finish(
        new EngineError(
          'egress_rules_failed',
          `the guard could not install the egress rules: ${seen.trim().slice(-MAX_REPORT_CHARS)}`,
        ),
      );
    };
    const onAbort = (): void => {
      finish(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    if (signal?.aborted === true) {
      onAbort();
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    proc.stdout.on('data', onData);
    proc.stdout.once('end', onEnd);
  }).catch((error: unknown) => {
    proc.close();
    throw error;
  });
  return proc;
}
