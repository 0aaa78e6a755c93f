/**
 * The faithful sender's webhook management API and email read as a web-standard handler: bearer
 * API keys with scopes (401 invalid_api_key, 403 missing_scope: `webhooks:manage` for
 * `/webhooks…`, `emails:read` for `GET /emails/{id}`), JSON bodies (415 json_required),
 * X-Request-Id on every answer, the error shape `{ error: { code, message, requestId, fields? } }`.
 */
import { checkEndpointUrl } from '../api/urls.js'
import {
  SENDER_DELIVERIES_CAP,
  type SenderApiFault,
  type SenderApiRequest,
  type SenderDelivery,
  type SenderEmail,
  type SenderEndpoint,
} from './sender-types.js'

/** What the API handler needs from the sender. */
export interface SenderState {
  apiKeys: Record<string, readonly string[]>
  allowLocalUrls: boolean
  faults: SenderApiFault[]
  requests: SenderApiRequest[]
  listEndpoints(): SenderEndpoint[]
  createEndpoint(url: string): { id: string; secret: string }
  /** False when the endpoint is unknown. */
  setEnabled(id: string, enabled: boolean): boolean
  /** Undefined when the endpoint is unknown; newest first. */
  deliveries(id: string): SenderDelivery[] | undefined
  retry(endpointId: string, deliveryId: string): 'ok' | 'not_found' | 'delivery_expired'
  /** Undefined when unknown or past the email retention. */
  email(id: string): SenderEmail | undefined
}

const WEBHOOKS_SCOPE = 'webhooks:manage'
const EMAILS_SCOPE = 'emails:read'

class ApiAnswer {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

function fail(
  status: number,
  code: string | undefined,
  message: string,
  fields?: Array<{ path: string; message: string }>,
  headers?: Record<string, string>,
): ApiAnswer {
  return new ApiAnswer(status, { error: { ...(code ? { code } : {}), message, ...(fields ? { fields } : {}) } }, headers)
}

/** The key's scopes, or the 401 answer. */
function authenticate(state: SenderState, header: string | null): readonly string[] | ApiAnswer {
  const match = header?.match(/^Bearer (\S+)$/)
  const scopes = match ? state.apiKeys[match[1] as string] : undefined
  return scopes ?? fail(401, 'invalid_api_key', 'The API key is missing, malformed or not valid.')
}

function missingScope(scope: string): ApiAnswer {
  return fail(403, 'missing_scope', `This API key lacks the scope ${scope}.`)
}

async function readJson(request: Request): Promise<{ ok: true; value: unknown } | { ok: false; answer: ApiAnswer }> {
  const type = request.headers.get('content-type') ?? ''
  if (!/^application\/json\s*(;|$)/i.test(type))
    return { ok: false, answer: fail(415, 'json_required', 'Request bodies must be application/json.') }
  try {
    return { ok: true, value: JSON.parse(await request.text()) }
  } catch {
    return { ok: false, answer: fail(400, 'invalid_json', 'The request body is not valid JSON.') }
  }
}

/** The path's segments, percent-decoded; undefined when an escape is malformed (`%E0%A4%A`, `%zz`). */
function segments(path: string): string[] | undefined {
  try {
    return path.split('/').filter(Boolean).map(decodeURIComponent)
  } catch {
    return undefined
  }
}

/** `GET /emails/{id}`: the email's status and events; 404 when unknown, another organization's, or past the retention. */
function emailRoute(state: SenderState, method: string, parts: string[]): ApiAnswer {
  if (parts.length !== 2) return fail(404, 'not_found', 'No such route.')
  if (method !== 'GET') return fail(405, 'method_not_allowed', 'Use GET on /emails/{id}.')
  const email = state.email(parts[1] as string)
  return email ? new ApiAnswer(200, email) : fail(404, 'not_found', 'No email with this id.')
}

async function route(state: SenderState, request: Request, path: string, scopes: readonly string[]): Promise<ApiAnswer> {
  const parts = segments(path)
  if (!parts) return fail(400, 'validation_error', 'The request path is not valid: it has a malformed percent-encoding.')
  const method = request.method
  if (parts[0] === 'emails') return scopes.includes(EMAILS_SCOPE) ? emailRoute(state, method, parts) : missingScope(EMAILS_SCOPE)
  if (!scopes.includes(WEBHOOKS_SCOPE)) return missingScope(WEBHOOKS_SCOPE)
  if (parts[0] !== 'webhooks' || parts.length > 3) return fail(404, 'not_found', 'No such route.')
  const id = parts[1]
  if (parts.length === 1) {
    if (method === 'GET') return new ApiAnswer(200, state.listEndpoints())
    if (method !== 'POST') return fail(405, 'method_not_allowed', 'Use GET or POST on /webhooks.')
    const body = await readJson(request)
    if (!body.ok) return body.answer
    const url = (body.value as { url?: unknown } | null)?.url
    const problem = checkEndpointUrl(url, state.allowLocalUrls)
    if (problem)
      return fail(400, problem.code, `The endpoint URL was refused: ${problem.message}.`, [{ path: 'url', message: problem.message }])
    return new ApiAnswer(201, state.createEndpoint(url as string))
  }
  if (parts.length === 2) {
    if (method !== 'PATCH') return fail(405, 'method_not_allowed', 'Use PATCH on /webhooks/{id}.')
    const body = await readJson(request)
    if (!body.ok) return body.answer
    const enabled = (body.value as { enabled?: unknown } | null)?.enabled
    if (typeof enabled !== 'boolean')
      return fail(400, 'validation_error', 'The request is not valid.', [{ path: 'enabled', message: 'required, a boolean' }])
    return state.setEnabled(id as string, enabled)
      ? new ApiAnswer(200, { ok: true })
      : fail(404, 'not_found', 'No webhook endpoint with this id.')
  }
  if (parts[2] === 'deliveries' && method === 'GET') {
    const list = state.deliveries(id as string)
    return list ? new ApiAnswer(200, list.slice(0, SENDER_DELIVERIES_CAP)) : fail(404, 'not_found', 'No webhook endpoint with this id.')
  }
  if (parts[2] === 'retry' && method === 'POST') {
    const body = await readJson(request)
    if (!body.ok) return body.answer
    const deliveryId = (body.value as { deliveryId?: unknown } | null)?.deliveryId
    if (typeof deliveryId !== 'string' || deliveryId === '')
      return fail(400, 'validation_error', 'The request is not valid.', [{ path: 'deliveryId', message: 'required, a string' }])
    if (!state.listEndpoints().some((e) => e.id === id)) return fail(404, 'not_found', 'No webhook endpoint with this id.')
    const outcome = state.retry(id as string, deliveryId)
    if (outcome === 'ok') return new ApiAnswer(200, { ok: true })
    return outcome === 'delivery_expired'
      ? fail(404, 'delivery_expired', 'The payload of this delivery has expired.')
      : fail(404, 'not_found', 'No delivery with this id for this endpoint.')
  }
  return fail(404, 'not_found', 'No such route.')
}

async function answer(state: SenderState, request: Request): Promise<ApiAnswer> {
  const fault = state.faults.shift()
  if (fault?.delayMs) await new Promise((resolve) => setTimeout(resolve, fault.delayMs))
  if (fault?.status) {
    const code = fault.code ?? (fault.status >= 500 ? 'internal_error' : undefined)
    return fail(
      fault.status,
      code,
      'Injected failure; try again later.',
      undefined,
      fault.retryAfter ? { 'retry-after': fault.retryAfter } : {},
    )
  }
  const scopes = authenticate(state, request.headers.get('authorization'))
  if (scopes instanceof ApiAnswer) return scopes
  const path = new URL(request.url).pathname
  if (!path.startsWith('/v1/')) return fail(404, 'not_found', 'No such route; the API lives under /v1.')
  return route(state, request, path.slice(3), scopes)
}

/** Answers one management API request. */
export async function handleApiRequest(state: SenderState, request: Request): Promise<Response> {
  const requestId = crypto.randomUUID()
  const result = await answer(state, request)
  let body = result.body
  const error = (body as { error?: Record<string, unknown> } | null)?.error
  if (error) body = { error: { ...error, requestId } }
  state.requests.push({ method: request.method, path: new URL(request.url).pathname, status: result.status, requestId })
  return new Response(JSON.stringify(body), {
    status: result.status,
    headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...result.headers },
  })
}
