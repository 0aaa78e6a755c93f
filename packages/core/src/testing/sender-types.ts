/**
 * Types and defaults of the faithful sender (the testing kit's stand-in for the
 * email service's delivery side and webhook management API, as SPEC.md describes them).
 */
import type { WebhookEvent } from '@email-webhooks/core'
import type { EmailStatus, EmailStatusEvent } from '../api/emails.js'

/** The published test API key of the faithful sender (scopes `webhooks:manage` and `emails:read`). Never a real key. */
export const TEST_API_KEY = 'ek_test_email_webhooks_do_not_use_in_production'
/** The receiver timeout of the contract: 10 s. */
export const SENDER_RECEIVER_TIMEOUT_MS = 10_000
/** Attempts per delivery before it fails: 10. */
export const SENDER_MAX_ATTEMPTS = 10
/** Consecutive failed attempts after which an endpoint is disabled: 10 by default. */
export const SENDER_DISABLE_AFTER = 10
/** First backoff wait (before time scaling): 5 s, doubling per attempt. */
export const SENDER_INITIAL_BACKOFF_MS = 5_000
/** Largest backoff wait (before time scaling): 1 h. */
export const SENDER_MAX_BACKOFF_MS = 3_600_000
/** How long a delivery's payload can be retried by hand by default: 3 days (the service does not say). */
export const SENDER_PAYLOAD_LIFETIME_MS: number = 3 * 24 * 3_600_000
/** The most delivery records `GET /webhooks/{id}/deliveries` returns. */
export const SENDER_DELIVERIES_CAP = 100
/** How long `GET /emails/{id}` serves an email by default, from its creation: 30 days (the plan's log retention; the service does not say). */
export const SENDER_EMAIL_RETENTION_MS: number = 30 * 24 * 3_600_000

/** An email as `GET /emails/{id}` serves it. */
export type SenderEmail = EmailStatus
/** One entry of an email's `events` list. */
export type SenderEmailEvent = EmailStatusEvent

/** Options of `createFaithfulSender`. */
export interface FaithfulSenderOptions {
  /**
   * API keys and their scopes.
   * @defaultValue `{ [TEST_API_KEY]: ['webhooks:manage', 'emails:read'] }`
   */
  apiKeys?: Record<string, readonly string[]>
  /**
   * Multiplies every backoff wait (not the receiver timeout): 0.001 turns 5 s into 5 ms.
   * @defaultValue `1`
   */
  timeScale?: number
  /**
   * Receiver timeout in real milliseconds.
   * @defaultValue `10000`
   */
  receiverTimeoutMs?: number
  /**
   * Attempts per delivery.
   * @defaultValue `10`
   */
  maxAttempts?: number
  /**
   * Consecutive failed attempts that disable an endpoint.
   * @defaultValue `10`
   */
  disableAfter?: number
  /**
   * First backoff wait before scaling, whole ms: attempt n waits `initialBackoffMs × 2ⁿ⁻¹`, at most
   * `maxBackoffMs`.
   * @defaultValue `5000`
   */
  initialBackoffMs?: number
  /**
   * Largest backoff wait before scaling, whole ms.
   * @defaultValue 1 h
   */
  maxBackoffMs?: number
  /**
   * How long after the event a delivery can still be retried by hand (on `now`); after it, a retry
   * answers 404 `delivery_expired`.
   * @defaultValue 3 days
   */
  payloadLifetimeMs?: number
  /**
   * How long after an email's first event (on `now`) `GET /emails/{id}` still serves it; after it,
   * 404 `not_found`.
   * @defaultValue 30 days
   */
  emailRetentionMs?: number
  /**
   * Clock for `webhook-timestamp`, `created_at` and expiry.
   * @defaultValue `Date.now`
   */
  now?: () => number
  /**
   * Randomness for repeats and reordering.
   * @defaultValue `Math.random`
   */
  random?: () => number
  /**
   * The `fetch` used to deliver.
   * @defaultValue `globalThis.fetch`
   */
  fetch?: typeof fetch
  /**
   * Accept `http(s)://` endpoint URLs to a loopback host (`localhost`, 127.0.0.0/8, `[::1]`) on any
   * port; `false` applies the service's URL rules.
   * @defaultValue `true`
   */
  allowLocalUrls?: boolean
  /**
   * Probability in [0, 1] that a delivered event is sent once more (freshly signed).
   * @defaultValue `0`
   */
  repeatProbability?: number
  /**
   * Each first attempt waits a random time in [0, reorderWindowMs) real ms, so events arrive out of
   * order.
   * @defaultValue `0`
   */
  reorderWindowMs?: number
  /**
   * Called after every attempt (repeats too) with its status, failure kind, timestamp and
   * signature.
   */
  onAttempt?: (attempt: SenderAttempt) => void
  /**
   * What a delivery record's `state` says. `'documented'`: `pending`, the only value the service's
   * contract shows, for every record, whatever became of it, so that code tested against this
   * sender decides from the documented fields (`attempts`, `last_status`, `next_attempt_at`).
   * `'descriptive'`: this sender's own names (`pending`, `delivering`, `succeeded`, `failed`), for
   * tests that read what happened; the real service promises none of them.
   * @defaultValue `'documented'`
   */
  states?: 'documented' | 'descriptive'
}

/** One POST to a receiver, as the sender saw it. */
export interface SenderAttempt {
  endpointId: string
  deliveryId: string
  eventId: string
  /** 1-based attempt number of the delivery (repeats carry the attempt they repeat). */
  attempt: number
  /** `webhook-timestamp` sent. */
  timestamp: string
  /** `webhook-signature` sent. */
  signature: string
  /** HTTP status; 0 for a timeout or a network failure. */
  status: number
  ok: boolean
  /** Why it failed: a non-2xx, a 3xx (redirects are not followed), the timeout, or the network. */
  failure?: 'status' | 'redirect' | 'timeout' | 'network'
  /** True for an extra send of an already delivered event (`repeatProbability`). */
  repeat: boolean
}

/** An endpoint as the management API lists it. */
export interface SenderEndpoint {
  id: string
  url: string
  enabled: boolean
  failures: number
  created_at: string
}

/** What became of a delivery, in this sender's own words (`states: 'descriptive'`); the contract documents none but `pending`. */
export type SenderDeliveryState = 'pending' | 'delivering' | 'succeeded' | 'failed'

/**
 * A delivery record as the management API lists it. `state` is `pending` for every record by
 * default (the only value the contract shows); with `states: 'descriptive'`, one of this
 * sender's own (`SenderDeliveryState`).
 */
export interface SenderDelivery {
  id: string
  event_id: string
  state: string
  attempts: number
  last_status: number | null
  next_attempt_at: string | null
}

/** An injected answer for the next management API request (to test clients' backoff and timeouts). */
export interface SenderApiFault {
  /** Answer with this status (429, 500, 502, 503, …); omit to only delay and then answer normally. */
  status?: number
  /** Error code in the body; default `internal_error` for 5xx, none for 429. */
  code?: string
  /** `Retry-After` header value, e.g. `'1'`. */
  retryAfter?: string
  /** Wait this many ms before answering. */
  delayMs?: number
}

/** One management API request, as the sender answered it. */
export interface SenderApiRequest {
  method: string
  path: string
  status: number
  requestId: string
}

/** What `emit` returns: the event and the delivery records created (one per enabled endpoint). */
export interface EmitResult {
  event: WebhookEvent
  deliveries: SenderDelivery[]
}

/** The in-process sender. */
export interface FaithfulSender {
  /** The management API as a web-standard handler (paths under `/v1`). */
  fetch(request: Request): Promise<Response>
  /**
   * Creates an enabled endpoint without the API, as `POST /webhooks` does. `options.secret` picks its signing secret
   * (a test's app may already be running with one, e.g. `TEST_SECRET`); by default a new random one.
   */
  createEndpoint(url: string, options?: { secret?: string }): { id: string; secret: string }
  /**
   * Emits an event to every enabled endpoint (a fresh `email.queued` event by default). An email event
   * (`email.*` with a string `data.id`) is also kept in its email's `events` list, whatever the
   * endpoints' state, with `data` minus `id` as its `details`.
   */
  emit(input?: { event?: WebhookEvent; type?: string; data?: Record<string, unknown> }): EmitResult
  /** The email as `GET /emails/{id}` serves it now (a copy), or undefined when unknown or past `emailRetentionMs`. */
  email(id: string): SenderEmail | undefined
  /** The endpoint as the API lists it, or undefined. */
  endpoint(id: string): SenderEndpoint | undefined
  /** Every delivery record of an endpoint, newest first (uncapped, unlike the API). */
  deliveries(endpointId: string): SenderDelivery[]
  /** Every attempt made so far, in order. */
  readonly attempts: readonly SenderAttempt[]
  /** Every management API request answered so far, in order. */
  readonly apiRequests: readonly SenderApiRequest[]
  /** Queues answers for the next management API requests, in order. */
  injectApiFaults(...faults: SenderApiFault[]): void
  /** Resolves when no attempt is scheduled or running; rejects after `timeoutMs` (default 10 000). */
  idle(timeoutMs?: number): Promise<void>
  /** Cancels every scheduled attempt and aborts those running. */
  close(): void
}
