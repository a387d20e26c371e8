// A signing key signs the runs that start after it was made (CFH-EVID-2): `cfh keys init`
// records the key's creation; an unsigned run that started before it audits as a warn that
// names the key, one that started after it fails, and `cfh audit --require-signature`
// fails every unsigned run whenever it ran. A run counts as older than the key only when
// every record of its start is (its id, snapshot.createdAt, run_created): a signature
// removed and one of them rewritten, re-sealed, still fails. Real runs through the built
// CLI, keys in a temporary CFH_KEY_DIR.
import { describe, expect, it } from 'vitest';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { copyRun, eventOf, forge } from './audit-forge.js';
import { cfh, onlyRunDir, useScratch } from './helpers.js';

const scratch = useScratch('key-time');

const AuditJson = z.object({
  ok: z.boolean(),
  checks: z.array(z.object({ id: z.string(), verdict: z.string(), detail: z.string() })),
});

async function signatureOf(
  dir: string,
  env: Record<string, string>,
  extra: readonly string[] = [],
): Promise<{ exitCode: number; verdict: string; detail: string }> {
  const r = await cfh(['audit', '--json', ...extra, dir], { env });
  const parsed = AuditJson.parse(JSON.parse(r.stdout));
  const check = parsed.checks.find((c) => c.id === 'integrity.signature');
  return { exitCode: r.exitCode, verdict: check?.verdict ?? '', detail: check?.detail ?? '' };
}

/** A run id holds whole seconds: a key made in the second a run started is after it. */
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1000));

async function commandRun(root: string, env: Record<string, string>): Promise<string> {
  const ws = await scratch.sampleRepo();
  const r = await cfh(
    ['sandbox', 'run', '--workspace', ws, '--artifact-root', root, '--', 'true'],
    {
      env,
    },
  );
  expect(r.exitCode, r.stderr).toBe(0);
  return onlyRunDir(root);
}

describe('unsigned runs and the time a key was made (CFH-EVID-2)', () => {
  it('an unsigned run from before the key warns naming it; one from after fails; --require-signature fails both', async () => {
    const keyDir = scratch.path('keys');
    const env = { CFH_KEY_DIR: keyDir };
    const before = await commandRun(scratch.path('art-before'), env);
    await nextSecond();
    const init = await cfh(['keys', 'init', '--json'], { env });
    expect(init.exitCode, init.stderr).toBe(0);
    const key = z
      .object({ fingerprint: z.string(), createdAt: z.string() })
      .parse(JSON.parse(init.stdout));

    // Before the key: a warn that names the key and its creation, and the audit passes.
    const old = await signatureOf(before, env);
    expect(old.verdict).toBe('warn');
    expect(old.detail).toContain(
      `unsigned (before key SHA256:${key.fingerprint}, created ${key.createdAt})`,
    );
    expect(old.exitCode).toBe(0);
    // --require-signature: every unsigned run fails, whenever it ran.
    const required = await signatureOf(before, env, ['--require-signature']);
    expect(required.verdict).toBe('fail');
    expect(required.exitCode).toBe(1);

    // After the key: signed, and --require-signature passes it.
    const after = await commandRun(scratch.path('art-after'), env);
    expect((await signatureOf(after, env)).verdict).toBe('pass');
    expect((await signatureOf(after, env, ['--require-signature'])).exitCode).toBe(0);
    // Its signature removed: started after the key, so a fail, not a warn.
    await rm(path.join(after, 'signature.json'));
    const stripped = await signatureOf(after, env);
    expect(stripped.verdict).toBe('fail');
    expect(stripped.exitCode).toBe(1);

    // Variant: a run made after the key but with signing unset (another key directory),
    // audited against the key with --public-key: after the key, so it fails.
    const unsignedLater = await commandRun(scratch.path('art-elsewhere'), {
      CFH_KEY_DIR: scratch.path('no-keys'),
    });
    const pub = path.join(keyDir, 'operator.ed25519.pub.pem');
    expect(
      (
        await signatureOf(unsignedLater, { CFH_KEY_DIR: scratch.path('no-keys') }, [
          '--public-key',
          pub,
        ])
      ).verdict,
    ).toBe('fail');
  });

  it('a key record that names another key, or none beside a copied key: unsigned runs fail', async () => {
    const keyDir = scratch.path('keys-forged');
    const env = { CFH_KEY_DIR: keyDir };
    const before = await commandRun(scratch.path('art-forged'), env);
    await nextSecond();
    expect((await cfh(['keys', 'init'], { env })).exitCode).toBe(0);
    expect((await signatureOf(before, env)).verdict).toBe('warn');
    // The public key copied alone elsewhere: no creation known, every unsigned run fails.
    const alone = scratch.path('pub-alone');
    await mkdir(alone);
    await copyFile(path.join(keyDir, 'operator.ed25519.pub.pem'), path.join(alone, 'k.pem'));
    expect(
      (await signatureOf(before, env, ['--public-key', path.join(alone, 'k.pem')])).verdict,
    ).toBe('fail');
    // A record edited to name another fingerprint is not this key's: ignored.
    const record = path.join(keyDir, 'operator.ed25519.json');
    const text = await readFile(record, 'utf8');
    await writeFile(
      record,
      text.replace(/"fingerprint": "[0-9a-f]{8}/, '"fingerprint": "00000000'),
    );
    expect((await signatureOf(before, env)).verdict).toBe('fail');
  });

  it('a run after the key, its signature removed and its start rewritten to before the key, still fails', async () => {
    const keyDir = scratch.path('keys-rewritten');
    const env = { CFH_KEY_DIR: keyDir };
    expect((await cfh(['keys', 'init'], { env })).exitCode).toBe(0);
    const signed = await commandRun(scratch.path('art-rewritten'), env);
    const early = '2001-01-01T00:00:00.000Z';
    // run_created and snapshot.json createdAt moved to 2001, the chain re-sealed: the run's
    // id (its directory, every event's runId) still says when it started.
    const both = await copyRun(signed, scratch.path('rewritten'));
    await rm(path.join(both, 'signature.json'));
    await forge(both, (f) => {
      eventOf(f, 'run_created').ts = early;
      f.snapshot.createdAt = early;
    });
    const caught = await signatureOf(both, env);
    expect(caught.verdict).toBe('fail');
    expect(caught.detail).toMatch(/the run's run id \d{8}T\d{6}Z-[0-9a-f]{8} is not before it$/);
    // run_created alone moved: its id and snapshot say after the key.
    const one = await copyRun(signed, scratch.path('rewritten'));
    await rm(path.join(one, 'signature.json'));
    await forge(one, (f) => void (eventOf(f, 'run_created').ts = early));
    expect((await signatureOf(one, env)).detail).toMatch(
      /the run's run id .*, snapshot\.json createdAt .* is not before it$/,
    );
  });
});
