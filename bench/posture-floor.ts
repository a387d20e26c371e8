// The engine's own floor for a network posture: the object graph cfh's `allowlist`/`open`
// posture makes (src/sandbox/egress-sandbox.ts), made by raw dockerode with nothing of
// cfh's around it, against a raw container with its network disabled (the disabled
// posture's request). What the posture adds beyond the disabled run here is what the engine
// costs for a fresh network per run, whoever asks: bench/posture-setup.ts runs it side by
// side with cfh's runs, so cfh's own share of a posture's cost is the difference.
//
// The graph, in cfh's order: an internal bridge network (inter-container traffic off), a
// guard container on it (here a shell that sleeps: cfh's guard installs its rules in the
// same start), the workload created while the guard starts and joined to its namespace,
// started once the guard runs; at the end the workload, the guard and the network are
// removed in reverse.
import type Docker from 'dockerode';
import { BENCH_LABEL } from './bench-util.js';

export interface FloorSample {
  readonly totalMs: number;
  readonly steps: Readonly<Record<string, number>>;
}

export class PostureFloor {
  readonly #docker: Docker;
  readonly #image: string;
  readonly #tag: string;
  readonly #names: Set<string>;
  #seq = 0;

  /** `names` collects every container and network name made, for the leftover check. */
  constructor(docker: Docker, image: string, tag: string, names: Set<string>) {
    this.#docker = docker;
    this.#image = image;
    this.#tag = tag;
    this.#names = names;
  }

  #name(kind: string): string {
    const name = `cfh-bench-floor-${kind}-${this.#tag}-${String(this.#seq++)}`;
    this.#names.add(name);
    return name;
  }

  #options(
    name: string,
    cmd: string[],
    hostConfig: Docker.HostConfig,
  ): Docker.ContainerCreateOptions {
    return {
      name,
      Image: this.#image,
      Cmd: cmd,
      Labels: { [BENCH_LABEL]: this.#tag },
      HostConfig: hostConfig,
    };
  }

  /** `true` in a container with its network disabled: the disabled posture's request. */
  async disabled(): Promise<FloorSample> {
    const t0 = performance.now();
    const c = await this.#docker.createContainer({
      ...this.#options(this.#name('off'), ['true'], { NetworkMode: 'none' }),
      NetworkDisabled: true,
    });
    try {
      await c.start();
      await c.wait();
    } finally {
      await c.remove({ force: true, v: true });
    }
    return { totalMs: performance.now() - t0, steps: {} };
  }

  /** `true` in the posture's object graph, set up and torn down as cfh does. */
  async posture(): Promise<FloorSample> {
    const steps: Record<string, number> = {};
    const t0 = performance.now();
    let mark = t0;
    const step = (name: string): void => {
      const now = performance.now();
      steps[name] = now - mark;
      mark = now;
    };
    const netName = this.#name('net');
    const network = await this.#docker.createNetwork({
      Name: netName,
      Internal: true,
      CheckDuplicate: true,
      Labels: { [BENCH_LABEL]: this.#tag },
      Options: { 'com.docker.network.bridge.enable_icc': 'false' },
    });
    const undo: (() => Promise<unknown>)[] = [() => network.remove()];
    try {
      step('network');
      const guard = await this.#docker.createContainer(
        this.#options(this.#name('guard'), ['sh', '-c', 'exec sleep 600'], {
          NetworkMode: netName,
        }),
      );
      undo.push(() => guard.remove({ force: true, v: true }));
      step('guard-create');
      // The workload is created while the guard starts (cfh's overlap).
      const workload = this.#docker.createContainer(
        this.#options(this.#name('work'), ['true'], { NetworkMode: `container:${guard.id}` }),
      );
      await guard.start();
      const w = await workload;
      undo.push(() => w.remove({ force: true, v: true }));
      step('guard-start');
      await w.start();
      await w.wait();
      step('workload');
    } finally {
      for (const u of undo.reverse()) await u();
      step('teardown');
    }
    return { totalMs: performance.now() - t0, steps };
  }
}
