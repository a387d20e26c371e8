// One run's evidence directory, `<artifact-root>/<run-id>/`, held under a lock while cfh
// writes it. Owns the file layout; nothing else writes there.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import {
  lstat,
  mkdir,
  open,
  rename,
  rmdir,
  unlink,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { ArtifactError, errorMessage } from '../errors.js';
import { swapperOf } from '../path-trust.js';
import { writeFileAtomic, writeJsonAtomic } from './atomic-file.js';
import { canonicalJson } from './canonical-json.js';
import { EventLog, redactRecord, type EventListener, type Redactor } from './event-log.js';
import { isRunId } from './run-id.js';
import type { z } from 'zod';
import { issueText } from './schema/registry.js';
import { REPORT_SCHEMA, Report } from './schema/report.js';
import { Snapshot } from './schema/snapshot.js';
import { STATE_SCHEMA, RunState } from './schema/state.js';
import type { TerminalSigner } from './signing.js';

export const RUN_FILES = {
  snapshot: 'snapshot.json',
  seccomp: 'seccomp.json',
  events: 'events.jsonl',
  state: 'state.json',
  report: 'report.json',
  signature: 'signature.json',
  transcript: 'transcript.jsonl',
  outputs: 'outputs',
  lock: '.lock',
  /** Draft runs: the host workspace as copied at the start (paths, modes, sha256). */
  baseline: 'workspace-baseline.json',
  /** Draft runs: the patch (structured), the same as a unified diff, and its new contents. */
  patch: 'patch/patch.json',
  patchDiff: 'patch/patch.diff',
  blobs: 'patch/blobs',
} as const;

export interface TerminalRecord {
  readonly status: 'completed' | 'failed' | 'cancelled';
  readonly reason: string;
  readonly exitCode: number;
}

/** The cfh process writing a run: pid, `<boot id>/<start ticks>`, host. */
export interface RunWriter {
  readonly pid: number;
  readonly start: string;
  readonly host: string;
}

/**
 * The artifact root, made one directory at a time: each one that exists or is made must be
 * a directory nobody but root and cfh's user could replace before cfh makes the next in it
 * (a recursive mkdir would follow another user's link made after planning, and leave
 * directories wherever it pointed).
 */
async function makeRoot(root: string): Promise<void> {
  const uid = process.getuid?.() ?? 0;
  let here = '';
  for (const part of path
    .resolve(root)
    .split('/')
    .filter((p) => p !== '')) {
    here = `${here}/${part}`;
    const found = await lstat(here).catch(() => undefined);
    if (found?.isDirectory() === true) continue;
    if (found === undefined) {
      const swapper = swapperOf(here, uid);
      if (swapper !== undefined) {
        throw new ArtifactError(
          'artifact_root_shared',
          `${swapper.who} could replace entries of '${swapper.directory}', where cfh would make '${here}' for the evidence; nothing was written (choose an artifact root only root and you can change)`,
        );
      }
      await mkdir(here, { mode: 0o750 }).catch((error: unknown) => {
        if (!(error instanceof Error && 'code' in error && error.code === 'EEXIST')) throw error;
      });
      const made = await lstat(here);
      if (made.isDirectory()) continue;
    }
    // A link (the artifact root is a resolved path: one now means it changed) or a file.
    throw new ArtifactError(
      'artifact_root_shared',
      `'${here}' on the way to the artifact root is not a directory any more; nothing was written`,
    );
  }
}

export class RunDirectory implements AsyncDisposable {
  readonly root: string;
  readonly runId: string;
  readonly dir: string;
  readonly events: EventLog;
  readonly #release: () => Promise<void>;
  #released = false;
  readonly #blobs = new Set<string>();
  #redactor: Redactor | undefined;

  private constructor(root: string, runId: string, events: EventLog, release: () => Promise<void>) {
    this.root = root;
    this.runId = runId;
    this.dir = path.join(root, runId);
    this.events = events;
    this.#release = release;
  }

  /**
   * From here on every event, output and evidence file the run writes is redacted: a run
   * that holds credentials (host tools) installs its scrubber once, before it could leak.
   */
  redactWith(redactor: Redactor): void {
    this.#redactor = redactor;
    this.events.redactor = redactor;
  }

  get redactor(): Redactor | undefined {
    return this.#redactor;
  }

  /** `listener` sees every event of the run from the first (EventLog.subscribe). */
  static async create(
    root: string,
    runId: string,
    writer?: RunWriter,
    listener?: EventListener,
  ): Promise<RunDirectory> {
    if (!isRunId(runId))
      throw new ArtifactError('invalid_run_id', `run id '${runId}' is malformed`);
    const dir = path.join(root, runId);
    try {
      await makeRoot(root);
      await mkdir(dir, { mode: 0o750 });
      // Planning judged the artifact root; a directory on the way made by someone else
      // since is judged here, before any write.
      const swapper = swapperOf(dir, process.getuid?.() ?? 0);
      if (swapper !== undefined) {
        await rmdir(dir);
        throw new ArtifactError(
          'artifact_root_shared',
          `${swapper.who} could replace entries of '${swapper.directory}', and with them the evidence of run ${runId}; nothing was written (choose an artifact root only root and you can change)`,
        );
      }
      // From the first file on, a reader can tell whether the writer still runs: a cfh that
      // dies before its first lifecycle step leaves a run `runs list` shows as abandoned.
      await writeJsonAtomic(path.join(dir, RUN_FILES.state), {
        runId,
        state: 'created',
        ...(writer === undefined ? {} : { writer }),
        updatedAt: new Date().toISOString(),
      });
      await mkdir(path.join(dir, RUN_FILES.outputs), { mode: 0o750 });
      const release = await lockfile.lock(dir, {
        lockfilePath: path.join(dir, RUN_FILES.lock),
        realpath: false,
        stale: 30_000,
        update: 10_000,
        // A refresh that fails (cfh working as a workspace's owner for a while, in draft
        // mode) must not kill the run: the lock only keeps a second writer out.
        onCompromised: () => undefined,
      });
      const events = await EventLog.create(path.join(dir, RUN_FILES.events), runId);
      if (listener !== undefined) events.subscribe(listener);
      return new RunDirectory(root, runId, events, release);
    } catch (error) {
      if (error instanceof ArtifactError) throw error;
      throw new ArtifactError(
        'artifact_write_failed',
        `cannot create run directory ${dir}: ${errorMessage(error)}`,
        error,
      );
    }
  }

  path(file: string): string {
    return path.join(this.dir, file);
  }

  outputPath(name: string): string {
    return path.join(this.dir, RUN_FILES.outputs, name);
  }

  /**
   * Every file of the run's evidence enters the hash chain with its digest when it is
   * written (an `artifact_written` event), so an edit, removal or addition of any of them
   * is seen (docs/operators.md, "Checking a run"). state.json and report.json are derived
   * from the terminal event and checked against it instead.
   */
  async writeSnapshot(snapshot: Readonly<Record<string, unknown>>): Promise<string> {
    const body = jsonBody(checked(RUN_FILES.snapshot, Snapshot, snapshot));
    const sha256 = await writeFileAtomic(this.path(RUN_FILES.snapshot), body);
    // Its size is recorded too: a reader reads no more than that (run-reader.ts).
    await this.#recorded(RUN_FILES.snapshot, sha256, Buffer.byteLength(body));
    return sha256;
  }

  async writeFile(file: string, raw: string): Promise<string> {
    const contents =
      this.#redactor === undefined ? raw : this.#redactor.bytes(Buffer.from(raw)).toString('utf8');
    await mkdir(path.dirname(this.path(file)), { recursive: true, mode: 0o750 });
    const sha256 = await writeFileAtomic(this.path(file), contents);
    await this.#recorded(file, sha256, Buffer.byteLength(contents));
    return sha256;
  }

  /**
   * Keeps raw output under outputs/ (never overwriting) and returns its reference,
   * relative to the run directory, as events and observations cite it.
   */
  async writeOutput(name: string, data: Buffer): Promise<string> {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
      throw new ArtifactError('invalid_output_name', `output name '${name}' is malformed`);
    const kept = this.#redactor === undefined ? data : this.#redactor.bytes(data);
    await writeFile(this.outputPath(name), kept, { flag: 'wx', mode: 0o640 });
    const ref = `${RUN_FILES.outputs}/${name}`;
    await this.#recorded(ref, createHash('sha256').update(kept).digest('hex'), kept.length);
    return ref;
  }

  /**
   * Keeps a file's contents under patch/blobs/, named by their sha256 (content-addressed:
   * the same contents are kept and recorded once). Returns the digest and the reference.
   */
  async storeBlob(from: FileHandle): Promise<{ sha256: string; ref: string; bytes: number }> {
    const blobs = this.path(RUN_FILES.blobs);
    await mkdir(blobs, { recursive: true, mode: 0o750 });
    const incoming = path.join(blobs, `.incoming-${randomBytes(6).toString('hex')}`);
    const hash = createHash('sha256');
    let bytes = 0;
    const to = await open(incoming, 'wx', 0o640);
    try {
      const buffer = Buffer.allocUnsafe(1024 * 1024);
      for (;;) {
        const { bytesRead } = await from.read(buffer, 0, buffer.length, bytes);
        if (bytesRead === 0) break;
        hash.update(buffer.subarray(0, bytesRead));
        await to.write(buffer, 0, bytesRead, bytes);
        bytes += bytesRead;
      }
      // Not fsynced one by one (as tool outputs are not): a blob lost to a crash leaves a
      // digest that no longer matches, and an apply refuses a run that does not verify.
    } finally {
      await to.close();
    }
    const sha256 = hash.digest('hex');
    const ref = `${RUN_FILES.blobs}/${sha256}`;
    if (this.#blobs.has(sha256)) {
      await unlink(incoming);
      return { sha256, ref, bytes };
    }
    await rename(incoming, this.path(ref));
    this.#blobs.add(sha256);
    await this.#recorded(ref, sha256, bytes);
    return { sha256, ref, bytes };
  }

  /** A file written in pieces (streamed output, the transcript): its final digest. */
  async seal(file: string): Promise<string> {
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of createReadStream(this.path(file)) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      bytes += chunk.length;
    }
    const sha256 = hash.digest('hex');
    await this.#recorded(file, sha256, bytes);
    return sha256;
  }

  async #recorded(file: string, sha256: string, bytes?: number): Promise<void> {
    await this.events.append('artifact_written', {
      file,
      sha256,
      ...(bytes === undefined ? {} : { bytes }),
    });
  }

  /**
   * The terminal record (AH-LIFE-2): `run_finished`, carrying the digest of the report it
   * ends with, then report.json citing it, the operator's signature over both when a key is
   * configured, and state.json; all durable before the caller hears; then the lock is
   * released.
   */
  async finish(
    terminal: TerminalRecord,
    report: Record<string, unknown>,
    options: { readonly signer?: TerminalSigner | undefined } = {},
  ): Promise<void> {
    const fields = {
      status: terminal.status,
      terminalReason: terminal.reason,
      exitCode: terminal.exitCode,
    };
    // The report as it will be read back (undefined fields gone), without its anchor.
    const body = redactRecord(
      this.#redactor,
      JSON.parse(
        JSON.stringify({ schema: REPORT_SCHEMA, runId: this.runId, ...fields, ...report }),
      ) as Record<string, unknown>,
    );
    const reportSha256 = reportDigest(body);
    const finished = await this.events.append('run_finished', { ...fields, reportSha256 }, true);
    const lastEvent = { seq: finished.seq, hash: finished.hash };
    await this.writeReport({ ...body, lastEvent });
    if (options.signer !== undefined) {
      const signature = options.signer.sign({ runId: this.runId, event: lastEvent, reportSha256 });
      await writeJsonAtomic(this.path(RUN_FILES.signature), signature);
    }
    await this.writeState({
      schema: STATE_SCHEMA,
      runId: this.runId,
      state: terminal.status,
      terminalReason: terminal.reason,
      exitCode: terminal.exitCode,
      updatedAt: new Date().toISOString(),
      lastEvent,
    });
    await this.close();
  }

  /** state.json for a run still in progress, citing the last event written so far. */
  writeProgress(state: 'created' | 'running', extra: Record<string, unknown> = {}): Promise<void> {
    return this.writeState({
      schema: STATE_SCHEMA,
      runId: this.runId,
      state,
      updatedAt: new Date().toISOString(),
      lastEvent: { seq: this.events.lastSeq, hash: this.events.lastHash },
      ...extra,
    });
  }

  /** state.json, typed by the schema its readers parse it with (schema/state.ts). */
  async writeState(state: z.input<typeof RunState>): Promise<void> {
    await writeJsonAtomic(this.path(RUN_FILES.state), checked(RUN_FILES.state, RunState, state));
  }

  /** report.json, typed by the schema its readers parse it with (schema/report.ts). */
  async writeReport(report: Readonly<Record<string, unknown>>): Promise<void> {
    await writeJsonAtomic(this.path(RUN_FILES.report), checked(RUN_FILES.report, Report, report));
  }

  async close(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    try {
      await this.events.close();
    } finally {
      await this.#release().catch(() => undefined);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * The document as its readers will parse it (schema/*.ts, the audit's evidence.schema): a
 * document they would reject is refused here, as EventLog.append refuses such an event.
 */
function checked(name: string, schema: z.ZodType, value: unknown): unknown {
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new ArtifactError(
      'evidence_schema_violation',
      `${name} does not match its schema: ${parsed.error.issues.slice(0, 5).map(issueText).join('; ')}`,
    );
  return value;
}

const jsonBody = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

/** sha256 of a report's canonical JSON without `lastEvent`: what run_finished records. */
export function reportDigest(report: Readonly<Record<string, unknown>>): string {
  const body = Object.fromEntries(Object.entries(report).filter(([k]) => k !== 'lastEvent'));
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}
