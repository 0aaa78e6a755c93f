/**
 * One request to the sender's management API, with the client's policy: bearer key, JSON
 * bodies, a timeout per attempt, and bounded retries with full-jitter backoff on 429 and
 * 500/502/503 (honouring `Retry-After`). Failures become {@link EmailApiError}.
 */
import {
  type ApiErrorContext,
  adviceFor,
  EmailApiError,
  type EmailApiFieldError,
  formatApiMessage,
  MAY_HAVE_ACTED,
  scrub,
  scrubbedCause,
} from './errors.js'

/** Statuses the service calls temporary: retried with backoff (only 429 for a call that is not idempotent). */
export const RETRYABLE_STATUSES: readonly number[] = Object.freeze([429, 500, 502, 503])
/**
 * Connection failures that happen before the request leaves (no connection, no address): the
 * service cannot have acted, so even a call that is not idempotent may be sent again.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])

/** What {@link ClientOptions.onRetry} is told before each wait. */
export interface RetryInfo {
  /** The attempt that failed (1 for the first request). */
  attempt: number
  /** How long the client waits before the next attempt. */
  delayMs: number
  /** The failed answer's status, or 0 for a timeout or network failure. */
  status: number
  code: string
  /** Whether the delay came from the service's `Retry-After`. */
  fromRetryAfter: boolean
}

/** The resolved policy of one client (see `createWebhooksClient` for the defaults). */
export interface RequestPolicy {
  apiKey: string
  baseUrl: string
  fetch: typeof fetch
  maxRetries: number
  timeoutMs: number
  backoffBaseMs: number
  backoffMaxMs: number
  maxRetryAfterMs: number
  random: () => number
  onRetry: ((info: RetryInfo) => void) | undefined
}

/** One call: method, path under the base URL, body, and whether a lost answer may be retried. */
export interface ApiCall {
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  body?: unknown
  /**
   * False for POST /webhooks: a 5xx or a lost answer may come after the endpoint was created, so
   * such a call is retried only on 429 and on failures before the request left.
   */
  idempotent: boolean
  context: ApiErrorContext
  signal?: AbortSignal | undefined
}

/** A successful answer: parsed JSON and the request id. */
export interface ApiAnswer {
  status: number
  json: unknown
  requestId: string
}

interface Failure {
  error: EmailApiError
  retryable: boolean
  retryAfterMs: number | undefined
}

/** Parses `Retry-After` (seconds or an HTTP date) into milliseconds; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const date = Date.parse(text)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function errorBody(json: unknown): { code?: string; message?: string; requestId?: string; fields?: EmailApiFieldError[] } {
  const error = (json as { error?: unknown } | null)?.error
  if (!error || typeof error !== 'object') return {}
  const e = error as Record<string, unknown>
  const fields = Array.isArray(e.fields)
    ? e.fields
        .filter((f): f is EmailApiFieldError => !!f && typeof f.path === 'string' && typeof f.message === 'string')
        .map((f) => ({ path: f.path, message: f.message }))
    : undefined
  return {
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.message === 'string' ? { message: e.message } : {}),
    ...(typeof e.requestId === 'string' ? { requestId: e.requestId } : {}),
    ...(fields ? { fields } : {}),
  }
}

/** Settles with `promise`, or rejects when `signal` aborts first (even if the fetch ignores signals). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

/** The system error code (`ECONNREFUSED`, …) of a fetch failure: on the error or its cause (undici puts it there). */
function causeCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string') return code
  }
  return undefined
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text()
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** One attempt: a response or a classified failure. */
async function attempt(policy: RequestPolicy, call: ApiCall, attemptNo: number): Promise<ApiAnswer | Failure> {
  // A signal aborted before this attempt never fires its event: look, or the request would leave.
  if (call.signal?.aborted) throw call.signal.reason
  const timeout = new AbortController()
  const timer = setTimeout(() => timeout.abort(), policy.timeoutMs)
  const onCallerAbort = (): void => timeout.abort()
  call.signal?.addEventListener('abort', onCallerAbort, { once: true })
  const headers: Record<string, string> = { authorization: `Bearer ${policy.apiKey}`, accept: 'application/json' }
  if (call.body !== undefined) headers['content-type'] = 'application/json'
  try {
    const pending = policy.fetch(`${policy.baseUrl}${call.path}`, {
      method: call.method,
      headers,
      ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
      redirect: 'manual',
      signal: timeout.signal,
    })
    const response = await raceAbort(pending, timeout.signal)
    const json = await raceAbort(readJson(response), timeout.signal)
    const headerId = response.headers.get('x-request-id') ?? undefined
    if (response.status >= 200 && response.status < 300) return { status: response.status, json, requestId: headerId ?? '' }
    const body = errorBody(json)
    const code = body.code ?? (response.status === 429 ? 'rate_limited' : response.status >= 500 ? 'internal_error' : 'invalid_response')
    const requestId = body.requestId ?? headerId
    const advice = adviceFor(response.status, code, { ...call.context, mayHaveActed: !call.idempotent }, attemptNo)
    const message = formatApiMessage(advice, body.message ? scrub(body.message, policy.apiKey) : undefined, body.fields, requestId)
    const error = new EmailApiError({
      status: response.status,
      code,
      message: scrub(message, policy.apiKey),
      requestId,
      fields: body.fields,
      attempts: attemptNo,
    })
    return {
      error,
      retryable: call.idempotent ? RETRYABLE_STATUSES.includes(response.status) : response.status === 429,
      retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
    }
  } catch (cause) {
    if (call.signal?.aborted) throw call.signal.reason
    const timedOut = timeout.signal.aborted
    const code = timedOut ? 'timeout' : 'network_error'
    const notSent = !timedOut && NOT_SENT_CODES.has(causeCode(cause) ?? '')
    const maybe = !call.idempotent && !notSent ? ` ${MAY_HAVE_ACTED}` : ''
    const advice = timedOut
      ? `no answer to ${call.context.operation} within ${policy.timeoutMs} ms${attemptNo > 1 ? ` (${attemptNo} attempts)` : ''}. Check the base URL and the network, or raise timeoutMs.${maybe}`
      : `could not reach the service to ${call.context.operation}${attemptNo > 1 ? ` (${attemptNo} attempts)` : ''}: ${scrub(cause instanceof Error ? cause.message : String(cause), policy.apiKey)}. Check the base URL and the network.${maybe}`
    const error = new EmailApiError({
      status: 0,
      code,
      message: `[@email-webhooks/core/api] ${advice}`,
      attempts: attemptNo,
      cause: scrubbedCause(cause, policy.apiKey),
    })
    return { error, retryable: call.idempotent || notSent, retryAfterMs: undefined }
  } finally {
    clearTimeout(timer)
    call.signal?.removeEventListener('abort', onCallerAbort)
  }
}

/**
 * Sends one call with the policy's retries; resolves to the 2xx answer.
 * @throws {EmailApiError} when the service refuses, or retries run out; the caller's abort reason when `signal` fires.
 */
export async function request(policy: RequestPolicy, call: ApiCall): Promise<ApiAnswer> {
  for (let attemptNo = 1; ; attemptNo++) {
    const result = await attempt(policy, call, attemptNo)
    if (!('error' in result)) return result
    const { error, retryable, retryAfterMs } = result
    if (!retryable || attemptNo > policy.maxRetries) throw error
    if (retryAfterMs !== undefined && retryAfterMs > policy.maxRetryAfterMs) throw error
    const cap = Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** (attemptNo - 1))
    const delayMs = retryAfterMs ?? Math.floor(policy.random() * cap)
    policy.onRetry?.({ attempt: attemptNo, delayMs, status: error.status, code: error.code, fromRetryAfter: retryAfterMs !== undefined })
    await sleep(delayMs, call.signal)
  }
}
