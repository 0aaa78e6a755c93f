/**
 * The receiver pipeline (DESIGN.md): read → verify → parse → claim → dispatch → settle.
 * Adapters give it the raw body and the headers and write back the answer it returns.
 * A 2xx is returned only after the store's `complete` has resolved.
 */
import { getDefaultStore } from '#default-store'
import { WebhookHandlingError, WebhookVerificationError } from './errors.js'
import { type EmailEventOf, type EmailEventType, isEmailEventType, parseEnvelope, type WebhookEvent } from './events.js'
import type { WebhookHeaders } from './headers.js'
import type { WebhookSecret } from './secret.js'
import { MemoryDedupStore } from './store/memory.js'
import type { Claim, DedupStore } from './store/types.js'
import { createVerifier, type WebhookBody } from './verify.js'

const PACKAGE = '[@email-webhooks/core]'
export const DEFAULT_MAX_BODY_BYTES: number = 1024 * 1024
export const DEFAULT_LEASE_MS: number = 30_000
export const DEFAULT_RETENTION_MS: number = 7 * 24 * 60 * 60 * 1000
export const DEFAULT_NAMESPACE = 'default'
export const DEFAULT_STORE_TIMEOUT_MS = 5_000
/** Share of the lease after which `ctx.signal` aborts, so a handler stops before the lease ends. */
const HANDLER_SHARE_OF_LEASE = 0.8

const JSON_HEADERS = { 'content-type': 'application/json' } as const
const OK_BODY = '{"ok":true}'
const DUPLICATE_BODY = '{"ok":true,"duplicate":true}'

/** What every handler receives besides the event. Adapters add their own fields (Hono adds `c`). */
export interface HandlerContext {
  /** Aborts before the claim's lease ends: stop work and throw, so the event is retried cleanly. */
  signal: AbortSignal
  /** 1 on the first claim of this event, more when an earlier attempt failed or timed out. */
  attempt: number
  /** The verified `webhook-timestamp`, seconds since the epoch. */
  timestamp: number
}

/** A handler for one email event type. Resolve when the work is durably done; throw to get a retry. */
export type EmailEventHandler<T extends EmailEventType, Ctx = HandlerContext> = (
  event: EmailEventOf<T>,
  ctx: Ctx,
) => unknown | Promise<unknown>

/** Handlers keyed by email event type; only the known types are accepted as keys. */
export type EmailEventHandlers<Ctx = HandlerContext> = { [T in EmailEventType]?: EmailEventHandler<T, Ctx> }

/** A handler for any event, including types this version does not know. */
export type WebhookEventHandler<Ctx = HandlerContext> = (event: WebhookEvent, ctx: Ctx) => unknown | Promise<unknown>

/** What `onError` learns about a failed delivery; never the secret, the signature or the body. */
export interface ErrorInfo {
  /** The HTTP status answered. */
  status: number
  /** The verified event id, when verification got that far. */
  eventId?: string
  /** The event type, when the envelope was parsed. */
  type?: string
}

/** Options shared by `createReceiver` and every adapter's `emailWebhook`. */
export interface WebhookOptions<Ctx = HandlerContext> {
  /** Runs for every verified event (known or unknown) before its typed handler. */
  onEvent?: WebhookEventHandler<Ctx>
  /** Runs for event types that are not email events known to this version; the answer is 2xx after it resolves. */
  onUnknown?: WebhookEventHandler<Ctx>
  /** Observes every refused or failed delivery. What it throws is ignored. */
  onError?: (error: WebhookVerificationError | WebhookHandlingError, info: ErrorInfo) => void
  /** Dedup store; default a SQLite file on Node, memory (with a warning) elsewhere. */
  store?: DedupStore
  /** Prefix of dedup keys (`namespace:webhook-id`); default `"default"`. */
  namespace?: string
  /** Allowed timestamp distance in seconds, inclusive; default 300. */
  toleranceSeconds?: number
  /** Largest body accepted; default 1 MiB, larger → 413. */
  maxBodyBytes?: number
  /** How long a claim holds before another worker may take over; default 30,000 ms. */
  leaseMs?: number
  /** How long handled events are remembered; default 7 days in ms. */
  retentionMs?: number
  /** When `ctx.signal` aborts and the claim is released, counted from the claim; default 80% of `leaseMs`. Must be below it. */
  handlerTimeoutMs?: number
  /** Longest wait for one store call before answering 503; default 5,000 ms. */
  storeTimeoutMs?: number
  /** Clock in milliseconds since the epoch for the timestamp window; default `Date.now`. */
  now?: () => number
}

/** Options of {@link createReceiver}. */
export interface ReceiverOptions<Ctx = HandlerContext> extends WebhookOptions<Ctx> {
  secret: WebhookSecret
  handlers?: EmailEventHandlers<Ctx>
}

/** The outcome of one delivery, in words a log or a demo can show. */
export type ReceiveOutcome = 'handled' | 'duplicate' | 'unknown_type' | 'rejected' | 'retry'

/** The answer to send: status, headers and a small JSON body. */
export interface ReceiverResponse {
  status: number
  headers: Record<string, string>
  body: string
  outcome: ReceiveOutcome
  /** The stable error code of a non-2xx answer. */
  code?: string
  /** The verified event, when parsing got that far. */
  event?: WebhookEvent
}

/** Input of {@link Receiver.receive}. */
export interface ReceiveInput<Extra = object> {
  headers: WebhookHeaders
  /** The raw body, exactly as received. */
  body: WebhookBody
  /** Extra fields for the handler context (adapters pass their framework context here). */
  context?: Extra
}

/** A configured pipeline; adapters call `receive` for each request. */
export interface Receiver<Extra = object> {
  receive(input: ReceiveInput<Extra>): Promise<ReceiverResponse>
  /** The store in use (resolving the default store on first call). */
  store(): Promise<DedupStore>
  /** The answer to a request refused before `receive` (body too large while streaming, raw body gone); reports to `onError`. */
  refuse(error: WebhookVerificationError | WebhookHandlingError): ReceiverResponse
  /** The body limit adapters must enforce while reading. */
  readonly maxBodyBytes: number
}

function assertPositive(name: string, value: unknown, fallback: number, unit: 'milliseconds' | 'bytes'): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`${PACKAGE} ${name} must be a positive number of ${unit}.`)
  }
  return value
}

function errorBody(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } })
}

function rejectResponse(
  error: WebhookVerificationError | WebhookHandlingError,
  event?: WebhookEvent,
  retryAfterMs?: number,
): ReceiverResponse {
  const headers: Record<string, string> = { ...JSON_HEADERS }
  if (retryAfterMs !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)))
  const response: ReceiverResponse = {
    status: error.status,
    headers,
    body: errorBody(error.code, error.message),
    outcome: error instanceof WebhookVerificationError ? 'rejected' : 'retry',
    code: error.code,
  }
  if (event) response.event = event
  return response
}

function exceeds(body: WebhookBody, maxBytes: number): boolean {
  if (typeof body !== 'string') return typeof body === 'object' && body !== null && body.byteLength > maxBytes
  // A UTF-16 unit is at most 3 UTF-8 bytes: only measure exactly when it can matter.
  return body.length * 3 > maxBytes && new TextEncoder().encode(body).byteLength > maxBytes
}

class StoreTimeout extends Error {}

/**
 * An AbortController made only when a handler reads `ctx.signal` (most never do, and one
 * costs more than the rest of a small event's dispatch). Aborting before it exists is kept,
 * so a signal read later is already aborted with the same reason.
 */
class LazyAbort {
  #controller: AbortController | undefined
  #aborted = false
  #reason: unknown

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  abort(reason: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    this.#controller?.abort(reason)
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeout(`store call took longer than ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** The refusal of a body over `maxBodyBytes` (413), for adapters that refuse it while reading. */
export function bodyTooLargeError(maxBodyBytes: number): WebhookVerificationError {
  return new WebhookVerificationError(
    'body_too_large',
    `The body is larger than maxBodyBytes (${maxBodyBytes} bytes). Raise maxBodyBytes if the events are legitimately this large.`,
  )
}

/**
 * Builds the pipeline with secrets and options checked once.
 *
 * @param options.secret One endpoint secret or several (rotation).
 * @param options.handlers Handlers keyed by email event type.
 * @param options.store Dedup store; default SQLite on Node (`EMAIL_WEBHOOKS_DB` or `./.email-webhooks/dedup.db`).
 * @throws {TypeError} when a secret or an option is invalid.
 * @example
 * const receiver = createReceiver({ secret, handlers: { 'email.bounced': (e) => markBounced(e.data.id) } })
 * const answer = await receiver.receive({ headers: request.headers, body: await request.arrayBuffer() })
 */
export function createReceiver<Extra = object>(options: ReceiverOptions<HandlerContext & Extra>): Receiver<Extra> {
  if (options === null || typeof options !== 'object') throw new TypeError(`${PACKAGE} createReceiver needs an options object.`)
  const verify = createVerifier(options)
  const handlers = (options.handlers ?? {}) as Record<string, WebhookEventHandler<HandlerContext & Extra> | undefined>
  if (typeof handlers !== 'object') throw new TypeError(`${PACKAGE} handlers must be an object keyed by event type.`)
  for (const [type, handler] of Object.entries(handlers)) {
    if (!isEmailEventType(type)) {
      throw new TypeError(`${PACKAGE} "${type}" is not an email event type. Use one of EMAIL_EVENT_TYPES, or onUnknown for other types.`)
    }
    if (handler !== undefined && typeof handler !== 'function')
      throw new TypeError(`${PACKAGE} the handler for "${type}" must be a function.`)
  }
  const { onEvent, onUnknown, onError } = options
  for (const [name, fn] of [
    ['onEvent', onEvent],
    ['onUnknown', onUnknown],
    ['onError', onError],
  ] as const) {
    if (fn !== undefined && typeof fn !== 'function') throw new TypeError(`${PACKAGE} ${name} must be a function.`)
  }
  const namespace = options.namespace ?? DEFAULT_NAMESPACE
  if (typeof namespace !== 'string' || namespace.length === 0) throw new TypeError(`${PACKAGE} namespace must be a non-empty string.`)
  const maxBodyBytes = assertPositive('maxBodyBytes', options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES, 'bytes')
  const leaseMs = assertPositive('leaseMs', options.leaseMs, DEFAULT_LEASE_MS, 'milliseconds')
  const retentionMs = assertPositive('retentionMs', options.retentionMs, DEFAULT_RETENTION_MS, 'milliseconds')
  const storeTimeoutMs = assertPositive('storeTimeoutMs', options.storeTimeoutMs, DEFAULT_STORE_TIMEOUT_MS, 'milliseconds')
  const handlerTimeoutMs = assertPositive(
    'handlerTimeoutMs',
    options.handlerTimeoutMs,
    Math.floor(leaseMs * HANDLER_SHARE_OF_LEASE),
    'milliseconds',
  )
  if (handlerTimeoutMs >= leaseMs) {
    throw new TypeError(
      `${PACKAGE} handlerTimeoutMs (${handlerTimeoutMs}) must be below leaseMs (${leaseMs}), so a handler stops before another worker may take the event over.`,
    )
  }
  const store = options.store
  if (
    store !== undefined &&
    (typeof store !== 'object' ||
      typeof store.claim !== 'function' ||
      typeof store.complete !== 'function' ||
      typeof store.release !== 'function')
  ) {
    throw new TypeError(`${PACKAGE} store must implement claim, complete and release (see DedupStore).`)
  }
  let storePromise: Promise<DedupStore> | undefined = store ? Promise.resolve(store) : undefined
  const getStore = (): Promise<DedupStore> => {
    storePromise ??= getDefaultStore(() => new MemoryDedupStore())
    return storePromise
  }
  const claimOptions = { leaseMs, retentionMs }
  const completeOptions = { retentionMs }

  function report(error: WebhookVerificationError | WebhookHandlingError, info: ErrorInfo): void {
    if (!onError) return
    try {
      onError(error, info)
    } catch {
      // onError only observes; a failure inside it must not change the answer.
    }
  }

  function fail(error: WebhookVerificationError | WebhookHandlingError, event?: WebhookEvent, retryAfterMs?: number): ReceiverResponse {
    const info: ErrorInfo = { status: error.status }
    if (event) {
      info.eventId = event.id
      info.type = event.type
    }
    report(error, info)
    return rejectResponse(error, event, retryAfterMs)
  }

  async function runHandlers(event: WebhookEvent, ctx: HandlerContext & Extra): Promise<boolean> {
    if (onEvent) await onEvent(event, ctx)
    if (isEmailEventType(event.type)) {
      const handler = handlers[event.type]
      if (handler) await handler(event, ctx)
      return true
    }
    if (onUnknown) await onUnknown(event, ctx)
    return false
  }

  /** Runs the handlers; `claimedAt` (performance.now() before the claim was sent) starts the deadline, as the lease may have. */
  async function dispatch(event: WebhookEvent, ctx: HandlerContext & Extra, controller: LazyAbort, claimedAt: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          const error = new WebhookHandlingError(
            'handler_timeout',
            `The handler for ${event.type} did not finish within handlerTimeoutMs (${handlerTimeoutMs} ms); ctx.signal was aborted and the event will be retried. Make the handler faster or move slow work to a queue.`,
          )
          controller.abort(error)
          reject(error)
        },
        Math.max(0, handlerTimeoutMs - (performance.now() - claimedAt)),
      )
    })
    try {
      return await Promise.race([runHandlers(event, ctx), timedOut])
    } finally {
      clearTimeout(timer)
    }
  }

  async function receive(input: ReceiveInput<Extra>): Promise<ReceiverResponse> {
    const { headers, body } = input
    if (exceeds(body, maxBodyBytes)) return fail(bodyTooLargeError(maxBodyBytes))

    let event: WebhookEvent
    let timestamp: number
    try {
      const verified = await verify(headers, body)
      timestamp = verified.timestamp
      event = parseEnvelope(body, verified.id)
    } catch (error) {
      if (error instanceof WebhookVerificationError) return fail(error)
      throw error
    }

    const key = `${namespace}:${event.id}`
    let activeStore: DedupStore
    let claim: Claim
    let claimedAt = 0
    try {
      activeStore = await getStore()
      claimedAt = performance.now()
      const pending = activeStore.claim(key, claimOptions)
      const result = await withTimeout(pending, storeTimeoutMs).catch((error: unknown) => {
        // A claim that arrives after we gave up would block retries until its lease ends: give it back.
        if (error instanceof StoreTimeout) {
          pending.then((late) => (late.status === 'acquired' ? activeStore.release(late.claim) : false)).catch(() => {})
        }
        throw error
      })
      if (result.status === 'duplicate')
        return { status: 200, headers: { ...JSON_HEADERS }, body: DUPLICATE_BODY, outcome: 'duplicate', event }
      if (result.status === 'in_flight') {
        const error = new WebhookHandlingError(
          'in_flight',
          'This event is being handled by another request right now; retry after the Retry-After delay.',
        )
        return fail(error, event, result.retryAfterMs)
      }
      claim = result.claim
    } catch (cause) {
      return storeFailure(cause, event)
    }

    const controller = new LazyAbort()
    const ctx = {
      ...(input.context as Extra),
      get signal() {
        return controller.signal
      },
      attempt: claim.attempt,
      timestamp,
    } as HandlerContext & Extra
    let known: boolean
    try {
      known = await dispatch(event, ctx, controller, claimedAt)
    } catch (cause) {
      controller.abort(cause)
      // A release that throws, even synchronously (a custom store), must not change the 500.
      await withTimeout(
        Promise.resolve().then(() => activeStore.release(claim)),
        storeTimeoutMs,
      ).catch(() => false)
      const error =
        cause instanceof WebhookHandlingError && cause.code === 'handler_timeout'
          ? cause
          : new WebhookHandlingError(
              'handler_failed',
              `The handler for ${event.type} threw; the event was released and the sender will retry it. See the error's cause.`,
              { cause },
            )
      return fail(error, event)
    }

    let completed: boolean
    try {
      completed = await withTimeout(activeStore.complete(claim, completeOptions), storeTimeoutMs)
    } catch (cause) {
      return storeFailure(cause, event)
    }
    if (!completed) {
      const error = new WebhookHandlingError(
        'lease_lost',
        `The handler for ${event.type} finished after its lease (${leaseMs} ms) ended and another request took the event over; keep handlers well under leaseMs.`,
      )
      return fail(error, event, 1000)
    }
    return { status: 200, headers: { ...JSON_HEADERS }, body: OK_BODY, outcome: known ? 'handled' : 'unknown_type', event }
  }

  function storeFailure(cause: unknown, event: WebhookEvent): ReceiverResponse {
    const reason = cause instanceof StoreTimeout ? `did not answer within storeTimeoutMs (${storeTimeoutMs} ms)` : 'failed'
    const error = new WebhookHandlingError(
      'store_unavailable',
      `The dedup store ${reason}; nothing was marked done and the sender will retry. See the error's cause.`,
      { cause },
    )
    return fail(error, event, 1000)
  }

  return { receive, store: getStore, refuse: (error) => fail(error), maxBodyBytes }
}
