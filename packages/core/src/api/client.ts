/**
 * The typed client of the sender's webhook management API (SPEC.md, last section): list and
 * create endpoints, enable or disable one, list its deliveries, retry a delivery; and read an
 * email's status and events (`GET /emails/{id}`). On `fetch`, so it runs on every runtime; the
 * API key lives only in a closure and in request headers.
 */
import { EMAILS_SCOPE, type GetEmailResult, isEmailStatus, isUuid } from './emails.js'
import { EmailApiError } from './errors.js'
import { type ApiAnswer, type ApiCall, type RequestPolicy, type RetryInfo, request } from './http.js'
import { isLoopbackHost } from './urls.js'

/**
 * Default retries after the first attempt: on 429, 500/502/503 and lost answers of idempotent
 * calls; `createEndpoint` only on 429 and on connection failures before the request left.
 */
export const DEFAULT_API_MAX_RETRIES = 3
/** Default time an attempt may take before it is abandoned. */
export const DEFAULT_API_TIMEOUT_MS = 30_000
/** Default first backoff cap; each retry doubles it, up to {@link DEFAULT_API_BACKOFF_MAX_MS}. */
export const DEFAULT_API_BACKOFF_BASE_MS = 500
/** Default largest backoff cap. */
export const DEFAULT_API_BACKOFF_MAX_MS = 20_000
/** Default longest `Retry-After` the client waits; a longer one ends the retries. */
export const DEFAULT_API_MAX_RETRY_AFTER_MS = 60_000
/** The scope the webhook operations need. */
export const WEBHOOKS_SCOPE = 'webhooks:manage'

/** Options of {@link createWebhooksClient}. */
export interface WebhooksClientOptions {
  /**
   * Server-side API key (scope `webhooks:manage` for the webhook operations, `emails:read` for
   * `getEmail`), sent only as `Authorization: Bearer`. It never appears in an error, a message or a
   * `cause`. A missing one, or one with white space, throws a `TypeError` at creation.
   */
  apiKey: string
  /**
   * The API's base URL; its path ends in `/v1`. `https://` (plain `http://` only to a loopback
   * host: `localhost`, 127.0.0.0/8, `[::1]`), with no credentials, query or fragment; anything else
   * throws a `TypeError` at creation.
   */
  baseUrl: string
  /**
   * The `fetch` to use (a proxy-aware one, or a test double).
   * @defaultValue `globalThis.fetch`
   */
  fetch?: typeof fetch
  /**
   * Retries after the first attempt, on 429 and 500/502/503 and on a timeout or network failure;
   * `0` disables them. `createEndpoint` is retried only on 429 and when the request never left
   * (connection refused, no address): a 5xx or a lost answer may come after the endpoint was
   * created, and a second endpoint would get a secret nobody saw; the error then says to list the
   * endpoints first.
   * @defaultValue `3`
   */
  maxRetries?: number
  /**
   * Time one attempt may take before it is aborted, whole ms.
   * @defaultValue `30000`
   */
  timeoutMs?: number
  /**
   * First backoff cap, whole ms, doubling per retry, with full jitter: attempt n waits a random
   * time in [0, min(`backoffMaxMs`, `backoffBaseMs` × 2ⁿ⁻¹)).
   * @defaultValue `500`
   */
  backoffBaseMs?: number
  /**
   * Largest backoff cap, whole ms.
   * @defaultValue `20000`
   */
  backoffMaxMs?: number
  /**
   * A `Retry-After` (seconds or HTTP date) is waited exactly; a longer one than this ends the
   * retries with the error.
   * @defaultValue `60000`
   */
  maxRetryAfterMs?: number
  /**
   * Source of jitter in [0, 1), for tests.
   * @defaultValue `Math.random`
   */
  random?: () => number
  /**
   * Called before each wait between attempts with `{ attempt, delayMs, status, code, fromRetryAfter
   * }` (for logs or progress).
   */
  onRetry?: (info: RetryInfo) => void
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call, including its retries and waits. */
  signal?: AbortSignal
}

/** A webhook endpoint as listed (the secret is never listed). */
export interface WebhookEndpoint {
  id: string
  url: string
  enabled: boolean
  failures: number
  created_at: string
}

/** A delivery record of one endpoint. `state` values are not documented by the service. */
export interface WebhookDelivery {
  id: string
  /** The event id, equal to the `webhook-id` the receiver deduplicates by. */
  event_id: string
  state: string
  attempts: number
  last_status: number | null
  next_attempt_at: string | null
  /** Not documented by the service; when every listed record carries it, `recoverEndpoint` retries in its order. */
  created_at?: string
}

/** The typed client; every method rejects with {@link EmailApiError}. */
export interface WebhooksClient {
  /** The validated base URL (without a trailing slash). */
  readonly baseUrl: string
  listEndpoints(options?: CallOptions): Promise<{ endpoints: WebhookEndpoint[]; requestId: string }>
  /** Creates an endpoint; `secret` is returned only here, once: store it now. */
  createEndpoint(url: string, options?: CallOptions): Promise<{ id: string; secret: string; requestId: string }>
  /** PATCH `{ enabled: true }`; also resets the failure counter. */
  enableEndpoint(id: string, options?: CallOptions): Promise<{ ok: true; requestId: string }>
  /** PATCH `{ enabled: false }`. */
  disableEndpoint(id: string, options?: CallOptions): Promise<{ ok: true; requestId: string }>
  /** At most 100 records; the service offers no pagination. */
  listDeliveries(endpointId: string, options?: CallOptions): Promise<{ deliveries: WebhookDelivery[]; requestId: string }>
  /** Requeues a delivery (by delivery-record id, not event id); 404 `delivery_expired` once the payload is gone. */
  retryDelivery(endpointId: string, deliveryId: string, options?: CallOptions): Promise<{ ok: true; requestId: string }>
  /**
   * Reads an email's status and events (scope `emails:read`). A 404 resolves to `{ found: false }`:
   * the email is outside the plan's log-retention window, or belongs to another organization (the
   * service answers both alike). Throws `TypeError` for an id that is not a UUID.
   */
  getEmail(emailId: string, options?: CallOptions): Promise<GetEmailResult>
}

/**
 * Checks a base URL and returns it without a trailing slash.
 * @throws {TypeError} when it is not an HTTPS URL (HTTP only to a loopback host: localhost, 127.0.0.0/8, [::1]) whose path ends in `/v1`, or carries credentials, a query or a fragment.
 */
export function validateBaseUrl(baseUrl: string): string {
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    throw new TypeError(`[@email-webhooks/core/api] baseUrl is not a URL: "${baseUrl}". Give the API's base URL, ending in /v1.`)
  }
  const local = url.protocol === 'http:' && isLoopbackHost(url.hostname)
  if (url.protocol !== 'https:' && !local)
    throw new TypeError(
      '[@email-webhooks/core/api] baseUrl must use https:// (http:// only to a loopback host: localhost, 127.0.0.0/8 or [::1], for tests): the API key must not travel in clear.',
    )
  if (url.username || url.password)
    throw new TypeError('[@email-webhooks/core/api] baseUrl must not carry credentials; pass the key as apiKey.')
  if (url.search || url.hash) throw new TypeError('[@email-webhooks/core/api] baseUrl must not have a query or a fragment.')
  const path = url.pathname.replace(/\/+$/, '')
  if (!path.endsWith('/v1')) throw new TypeError(`[@email-webhooks/core/api] baseUrl's path must end in /v1 (got "${url.pathname}").`)
  return `${url.origin}${path}`
}

function assertApiKey(apiKey: unknown): asserts apiKey is string {
  if (typeof apiKey !== 'string' || apiKey === '')
    throw new TypeError(
      '[@email-webhooks/core/api] apiKey is missing: pass a server-side API key with the scope webhooks:manage (and emails:read for getEmail).',
    )
  if (/[^!-~]/.test(apiKey))
    throw new TypeError(
      '[@email-webhooks/core/api] apiKey contains white space, control or non-ASCII characters; paste it again without them (the key is not printed here).',
    )
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`[@email-webhooks/core/api] ${name} must be a non-negative number.`)
  return value
}

function invalid(what: string, answer: ApiAnswer, attempts = 1): EmailApiError {
  return new EmailApiError({
    status: answer.status,
    code: 'invalid_response',
    message: `[@email-webhooks/core/api] the service's answer to ${what} has an unexpected shape; check that baseUrl points at the API (request id ${answer.requestId || 'none'}).`,
    requestId: answer.requestId || undefined,
    attempts,
  })
}

function segment(name: string, id: string): string {
  if (typeof id !== 'string' || id === '') throw new TypeError(`[@email-webhooks/core/api] ${name} must be a non-empty string.`)
  return encodeURIComponent(id)
}

function resolvePolicy(options: WebhooksClientOptions): RequestPolicy {
  assertApiKey(options.apiKey)
  return {
    apiKey: options.apiKey,
    baseUrl: validateBaseUrl(options.baseUrl),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    maxRetries: Math.floor(nonNegative('maxRetries', options.maxRetries, DEFAULT_API_MAX_RETRIES)),
    timeoutMs: nonNegative('timeoutMs', options.timeoutMs, DEFAULT_API_TIMEOUT_MS),
    backoffBaseMs: nonNegative('backoffBaseMs', options.backoffBaseMs, DEFAULT_API_BACKOFF_BASE_MS),
    backoffMaxMs: nonNegative('backoffMaxMs', options.backoffMaxMs, DEFAULT_API_BACKOFF_MAX_MS),
    maxRetryAfterMs: nonNegative('maxRetryAfterMs', options.maxRetryAfterMs, DEFAULT_API_MAX_RETRY_AFTER_MS),
    random: options.random ?? Math.random,
    onRetry: options.onRetry,
  }
}

/**
 * Creates a client for the sender's webhook management API and its email read.
 *
 * @param options.apiKey Server-side key with the scope `webhooks:manage` (`emails:read` for `getEmail`); never printed, never in errors.
 * @param options.baseUrl Base URL ending in `/v1`.
 * @param options.fetch Injectable `fetch`; default `globalThis.fetch`.
 * @param options.maxRetries Retries on 429 and 500/502/503 (`createEndpoint`: 429 and connections refused only); default 3.
 * @param options.timeoutMs Per-attempt timeout; default 30 000 ms.
 * @throws {TypeError} when the key is missing or malformed, or the base URL is not valid.
 * @example
 * const client = createWebhooksClient({ apiKey: process.env.EMAIL_API_KEY!, baseUrl: process.env.EMAIL_API_URL! })
 * const { deliveries } = await client.listDeliveries(endpointId)
 */
export function createWebhooksClient(options: WebhooksClientOptions): WebhooksClient {
  const policy = resolvePolicy(options)
  const call = (c: ApiCall): Promise<ApiAnswer> => request(policy, c)
  const setEnabled = async (id: string, enabled: boolean, o?: CallOptions): Promise<{ ok: true; requestId: string }> => {
    const operation = `${enabled ? 'enable' : 'disable'} endpoint ${id}`
    const answer = await call({
      method: 'PATCH',
      path: `/webhooks/${segment('endpoint id', id)}`,
      body: { enabled },
      idempotent: true,
      context: { operation, endpointId: id },
      signal: o?.signal,
    })
    return { ok: true, requestId: answer.requestId }
  }
  return Object.freeze({
    baseUrl: policy.baseUrl,
    async listEndpoints(o?: CallOptions) {
      const answer = await call({
        method: 'GET',
        path: '/webhooks',
        idempotent: true,
        context: { operation: 'list endpoints' },
        signal: o?.signal,
      })
      if (!Array.isArray(answer.json)) throw invalid('list endpoints', answer)
      return { endpoints: answer.json as WebhookEndpoint[], requestId: answer.requestId }
    },
    async createEndpoint(url: string, o?: CallOptions) {
      if (typeof url !== 'string' || url === '')
        throw new TypeError('[@email-webhooks/core/api] createEndpoint needs the endpoint URL (public HTTPS on port 443).')
      const answer = await call({
        method: 'POST',
        path: '/webhooks',
        body: { url },
        idempotent: false,
        context: { operation: 'create an endpoint' },
        signal: o?.signal,
      })
      const json = answer.json as { id?: unknown; secret?: unknown } | undefined
      if (typeof json?.id !== 'string' || typeof json.secret !== 'string') throw invalid('create an endpoint', answer)
      return { id: json.id, secret: json.secret, requestId: answer.requestId }
    },
    enableEndpoint: (id: string, o?: CallOptions) => setEnabled(id, true, o),
    disableEndpoint: (id: string, o?: CallOptions) => setEnabled(id, false, o),
    async listDeliveries(endpointId: string, o?: CallOptions) {
      const operation = `list the deliveries of endpoint ${endpointId}`
      const answer = await call({
        method: 'GET',
        path: `/webhooks/${segment('endpoint id', endpointId)}/deliveries`,
        idempotent: true,
        context: { operation, endpointId },
        signal: o?.signal,
      })
      if (!Array.isArray(answer.json)) throw invalid(operation, answer)
      return { deliveries: answer.json as WebhookDelivery[], requestId: answer.requestId }
    },
    async retryDelivery(endpointId: string, deliveryId: string, o?: CallOptions) {
      const operation = `retry delivery ${deliveryId} of endpoint ${endpointId}`
      const path = `/webhooks/${segment('endpoint id', endpointId)}/retry`
      segment('delivery id', deliveryId)
      const answer = await call({
        method: 'POST',
        path,
        body: { deliveryId },
        idempotent: true,
        context: { operation, endpointId, deliveryId },
        signal: o?.signal,
      })
      return { ok: true as const, requestId: answer.requestId }
    },
    getEmail: (emailId: string, o?: CallOptions) => readEmail(call, emailId, o),
  })
}

/** `GET /emails/{id}`: the email's status, or `found: false` outside the retention window (404). */
async function readEmail(call: (c: ApiCall) => Promise<ApiAnswer>, emailId: string, o?: CallOptions): Promise<GetEmailResult> {
  if (!isUuid(emailId))
    throw new TypeError(
      `[@email-webhooks/core/api] getEmail needs an email id (a UUID, as POST /emails returned it), got ${JSON.stringify(String(emailId).slice(0, 80))}.`,
    )
  const operation = `read email ${emailId}`
  let answer: ApiAnswer
  try {
    answer = await call({
      method: 'GET',
      path: `/emails/${encodeURIComponent(emailId)}`,
      idempotent: true,
      context: { operation, emailId, scope: EMAILS_SCOPE },
      signal: o?.signal,
    })
  } catch (error) {
    if (error instanceof EmailApiError && error.status === 404) return { found: false, code: error.code, requestId: error.requestId }
    throw error
  }
  if (!isEmailStatus(answer.json)) throw invalid(operation, answer)
  return { found: true, email: answer.json, requestId: answer.requestId }
}
