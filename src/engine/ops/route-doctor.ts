// `cfh doctor --profile P`: the profile's model route (AH-CAP-4). The credential the route
// names is present; the endpoint answers; the model is among those `GET /models` lists
// when the endpoint serves that list (a local server may not). One request, bounded in
// time, to the route's own endpoint and nowhere else; the key goes in the header the
// provider expects and never into a check's detail.
import { z } from 'zod';
import { errorMessage } from '../../errors.js';
import type { DoctorCheck } from './doctor.js';

export interface RouteToProbe {
  readonly provider: 'anthropic' | 'openai-compatible';
  /** The base URL as the gateway takes it (openai-compatible: with its /v1). */
  readonly baseUrl: string;
  readonly model: string;
  /** Where the key is read, by reference (`env:NAME`, `none`). */
  readonly credential: string;
  readonly key: string | undefined;
}

const PROBE_TIMEOUT_MS = 5_000;
const ModelList = z.looseObject({ data: z.array(z.looseObject({ id: z.string() })) });

function modelsUrl(route: RouteToProbe): string {
  const base = route.baseUrl.replace(/\/+$/, '');
  return route.provider === 'anthropic' ? `${base}/v1/models` : `${base}/models`;
}

function headersOf(route: RouteToProbe): Record<string, string> {
  if (route.key === undefined) return {};
  return route.provider === 'anthropic'
    ? { 'x-api-key': route.key, 'anthropic-version': '2023-06-01' }
    : { authorization: `Bearer ${route.key}` };
}

/** The credential check, then the endpoint's: reachable, and the model listed. */
export async function checkModelRoute(
  route: RouteToProbe,
  signal: AbortSignal,
): Promise<DoctorCheck[]> {
  const where = `${route.provider} ${route.baseUrl} ${route.model}`;
  const credential: DoctorCheck = {
    name: 'model-credential',
    ok: route.credential === 'none' || route.key !== undefined,
    required: true,
    detail:
      route.credential === 'none'
        ? 'none: the endpoint takes no credential'
        : `${route.credential}: ${route.key === undefined ? 'not set' : 'set'}`,
  };
  const url = modelsUrl(route);
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]);
  let response: Response;
  try {
    response = await fetch(url, { headers: headersOf(route), signal: bounded });
  } catch (error) {
    signal.throwIfAborted();
    const why =
      error instanceof Error && error.cause instanceof Error
        ? error.cause.message
        : errorMessage(error);
    return [
      credential,
      {
        name: 'model-endpoint',
        ok: false,
        required: true,
        detail: `${where}: unreachable (${why})`,
      },
    ];
  }
  const body: unknown = await response.json().catch(() => undefined);
  return [credential, endpointCheck(route, where, response.status, body)];
}

function endpointCheck(
  route: RouteToProbe,
  where: string,
  status: number,
  body: unknown,
): DoctorCheck {
  const name = 'model-endpoint';
  if (status === 401 || status === 403)
    return {
      name,
      ok: false,
      required: true,
      detail: `${where}: the endpoint refused the credential (${status})`,
    };
  if (status === 404)
    return {
      name,
      ok: true,
      required: true,
      detail: `${where}: reachable; it lists no models (404), the model is not checked`,
    };
  const list = ModelList.safeParse(body);
  if (status !== 200 || !list.success)
    return {
      name,
      ok: true,
      required: true,
      detail: `${where}: reachable (${status}); no model list to check the model against`,
    };
  const listed = list.data.data.some((m) => m.id === route.model);
  return {
    name,
    ok: listed,
    required: true,
    detail: listed
      ? `${where}: reachable; the model is listed`
      : `${where}: reachable, but the model is not among the ${list.data.data.length} it lists`,
  };
}
