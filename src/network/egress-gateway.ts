// The egress gateway: the only way out of a sandbox whose posture is `allowlist` or
// `open`. It runs in cfh's process, listening on the sandbox network's host-side
// address; the sandbox's netfilter rules send it every TCP connection and DNS query. For
// each it learns the destination (TLS server name, HTTP Host, CONNECT target, or the
// listed address a dedicated listener stands for), asks EgressPolicy, resolves names
// itself, connects to the address it checked, and reports one event per attempt
// (gateway-relay.ts for TCP, gateway-dns.ts for the filtering resolver).
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIP, type Server, type Socket } from 'node:net';
import type { EgressEvent } from './egress-event.js';
import type { EgressPolicy } from './egress-policy.js';
import type { Resolve } from './gateway-context.js';
import { answerDns } from './gateway-dns.js';
import {
  explicitProxy,
  FIRST_BYTES_MS,
  RELAY_BUFFER_BYTES,
  relayConnection,
  SHORT_FIRST_BYTES_MS,
  type RelayContext,
} from './gateway-relay.js';
import type { OriginalDestinationLookup } from './original-destination.js';
import { DeniedNameAddresses } from './denied-addresses.js';
import { RunResolutions } from './run-resolutions.js';

export type { EgressEvent } from './egress-event.js';
export type { Resolve } from './gateway-context.js';

export interface GatewayOptions {
  readonly policy: EgressPolicy;
  readonly bindAddress: string;
  /** Destination ports intercepted by name (Host header / TLS server name). */
  readonly interceptPorts: readonly number[];
  /** Listed address:port pairs, each with a listener of its own (any TCP protocol). */
  readonly pinned: readonly { readonly address: string; readonly port: number }[];
  readonly resolve: Resolve;
  readonly onEvent: (event: EgressEvent) => void;
  /** Where a connection caught by the catch-all was going (the guard's conntrack table). */
  readonly originalDestination?: OriginalDestinationLookup | undefined;
  /** The run's record of resolutions and its name budget (a fresh one by default). */
  readonly resolutions?: RunResolutions | undefined;
}

export interface GatewayEndpoints {
  readonly address: string;
  readonly dns: number;
  readonly proxy: number;
  readonly catchAll: number;
  readonly byPort: ReadonlyMap<number, number>;
  readonly pinned: readonly {
    readonly address: string;
    readonly port: number;
    readonly listen: number;
  }[];
}

export class EgressGateway implements AsyncDisposable {
  readonly endpoints: GatewayEndpoints;
  readonly #servers: Server[];
  readonly #udp: UdpSocket;
  readonly #sockets: Set<Socket>;
  readonly #open: { closed: boolean };

  private constructor(
    endpoints: GatewayEndpoints,
    servers: Server[],
    udp: UdpSocket,
    sockets: Set<Socket>,
    open: { closed: boolean },
  ) {
    this.endpoints = endpoints;
    this.#servers = servers;
    this.#udp = udp;
    this.#sockets = sockets;
    this.#open = open;
  }

  static async start(options: GatewayOptions): Promise<EgressGateway> {
    const servers: Server[] = [];
    const sockets = new Set<Socket>();
    const open = { closed: false };
    const track = (s: Socket): void => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    };
    const ctx: RelayContext = {
      policy: options.policy,
      resolve: options.resolve,
      resolutions: options.resolutions ?? new RunResolutions(),
      deniedNames: new DeniedNameAddresses(options.resolve),
      onEvent: options.onEvent,
      track,
      originalDestination: options.originalDestination,
    };
    const listen = async (handler: (s: Socket) => void): Promise<number> => {
      const server = createServer(
        { pauseOnConnect: false, highWaterMark: RELAY_BUFFER_BYTES },
        (s) => {
          track(s);
          s.on('error', () => undefined);
          handler(s);
        },
      );
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, options.bindAddress, () => {
          resolve();
        });
      });
      const addr = server.address();
      if (addr === null || typeof addr === 'string')
        throw new Error('gateway listener has no port');
      return addr.port;
    };
    try {
      const byPort = new Map<number, number>();
      for (const port of [...new Set(options.interceptPorts)].sort((a, b) => a - b)) {
        byPort.set(
          port,
          await listen(
            (s) =>
              void relayConnection(
                s,
                { via: 'transparent', port, firstBytesMs: FIRST_BYTES_MS },
                ctx,
              ),
          ),
        );
      }
      const pinned: { address: string; port: number; listen: number }[] = [];
      for (const p of options.pinned) {
        // Any TCP protocol: a server that speaks first gets its turn after a short wait.
        const arrival = {
          via: 'transparent' as const,
          port: p.port,
          address: p.address,
          firstBytesMs: SHORT_FIRST_BYTES_MS,
        };
        pinned.push({ ...p, listen: await listen((s) => void relayConnection(s, arrival, ctx)) });
      }
      const catchAll = await listen(
        (s) => void relayConnection(s, { via: 'transparent', firstBytesMs: FIRST_BYTES_MS }, ctx),
      );
      const proxy = await listen((s) => void explicitProxy(s, ctx));
      const udp = createSocket(isIP(options.bindAddress) === 6 ? 'udp6' : 'udp4');
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(0, options.bindAddress, () => {
          resolve();
        });
      });
      udp.on('message', (msg, rinfo) => {
        void answerDns(msg, ctx).then((reply) => {
          // An answer that arrives after close has nowhere to go (send would throw).
          if (reply === undefined || open.closed) return;
          udp.send(reply, rinfo.port, rinfo.address, () => undefined);
        });
      });
      return new EgressGateway(
        { address: options.bindAddress, dns: udp.address().port, proxy, catchAll, byPort, pinned },
        servers,
        udp,
        sockets,
        open,
      );
    } catch (error) {
      await Promise.all(servers.map((s) => closeServer(s)));
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.#open.closed) return;
    this.#open.closed = true;
    this.#udp.close();
    // Open connections end with the gateway: the sandbox keeps no egress (fail closed).
    for (const s of this.#sockets) s.destroy();
    await Promise.all(this.#servers.map((s) => closeServer(s)));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => {
      resolve();
    });
  });
}
