/**
 * Typed errors of @email-webhooks/core. Every error carries a stable `code` and the HTTP
 * `status` the receiver answers with. Messages say what to check and never contain the
 * secret, a signature or the request body.
 */

/** The prefix of every message of `@email-webhooks/core`. */
export const PACKAGE = '[@email-webhooks/core]'

/** Codes of requests that are refused before any handler runs. */
export type WebhookVerificationErrorCode =
  | 'missing_header'
  | 'duplicate_header'
  | 'malformed_id'
  | 'malformed_timestamp'
  | 'malformed_signature'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'signature_mismatch'
  | 'invalid_body'
  | 'invalid_envelope'
  | 'body_too_large'

const VERIFICATION_STATUS: Record<WebhookVerificationErrorCode, 400 | 401 | 413> = {
  /** A `webhook-*` header is missing: check that no proxy strips it. */
  missing_header: 401,
  /** A `webhook-*` header was sent twice: check proxies that join or repeat headers. */
  duplicate_header: 401,
  /** `webhook-id` must be visible ASCII without `.`, `,` or spaces. */
  malformed_id: 401,
  /** `webhook-timestamp` must be Unix seconds, digits only. */
  malformed_timestamp: 401,
  /**
   * `webhook-signature` must be exactly 64 hex characters (either case), with no `v1,` or `sha256=`
   * prefix; the message says when it is empty.
   */
  malformed_signature: 401,
  /**
   * More than `toleranceSeconds` in the past: check the server clock (NTP). A timestamp in
   * milliseconds is named as such: the sender (or your test) must send seconds.
   */
  timestamp_too_old: 401,
  /** More than `toleranceSeconds` in the future: check the server clock (NTP). */
  timestamp_too_new: 401,
  /** Wrong secret, or the body is not the raw bytes (parsed and re-serialised, or changed by a proxy). */
  signature_mismatch: 401,
  /** The body given to the verifier is not bytes or a string (a parsed object). */
  invalid_body: 401,
  /**
   * Signed, but not a JSON `{ id, type, created_at, data }` whose `id` equals `webhook-id` (a known
   * email type also needs a string `data.id`). The receiver acknowledges it (200
   * `{"ok":true,"ignored":"invalid_envelope"}`) and reports it: the sender would resend the same
   * bytes until it disables the endpoint. `parseEnvelope` throws it with status 400.
   */
  invalid_envelope: 400,
  /** Over `maxBodyBytes`; raise it if events are legitimately that large. */
  body_too_large: 413,
}

/**
 * A delivery was refused: its headers, signature, timestamp or body are not those of an
 * authentic, fresh event. `status` is 401 for verification failures, 400 for a signed body
 * that is not a valid event envelope, and 413 for a body over the size limit. It carries no
 * stack trace (`stack` is just its name and message): it is about the request, not the code.
 */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError'
  readonly code: WebhookVerificationErrorCode
  readonly status: 400 | 401 | 413
  /**
   * `timestamp_too_old` / `timestamp_too_new`: how far the `webhook-timestamp` was from this
   * server's clock, in whole seconds (positive: in the past). Undefined for the other codes.
   */
  readonly skewSeconds?: number

  constructor(code: WebhookVerificationErrorCode, message: string, options?: { cause?: unknown; skewSeconds?: number }) {
    // No stack trace: the error describes the request, not our code, and capturing one costs
    // more than the HMAC a forged request is refused without (see bench/RESULTS.md).
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(message, options)
    Error.stackTraceLimit = limit
    this.code = code
    this.status = VERIFICATION_STATUS[code]
    if (options?.skewSeconds !== undefined) this.skewSeconds = options.skewSeconds
  }
}

/** Codes of deliveries that were authentic but could not be handled now; the sender retries them. */
export type WebhookHandlingErrorCode =
  | 'handler_failed'
  | 'handler_timeout'
  | 'store_unavailable'
  | 'in_flight'
  | 'lease_lost'
  | 'raw_body_unavailable'
  /** A reconciled event (from `reconcileEmails`) reached a receiver that cannot recognise it: ordering off, or a store without facts. */
  | 'reconcile_unsupported'

const HANDLING_STATUS: Record<WebhookHandlingErrorCode, 409 | 500 | 503> = {
  /**
   * Your handler threw; the claim was released and the sender retries (if the release fails too,
   * the message says so: retries get 409 until the lease ends). The error's `cause` (seen by
   * `onError`, and in the log line) is your exception.
   */
  handler_failed: 500,
  /**
   * The handler ran past `handlerTimeoutMs`; `ctx.signal` aborted; the event stays claimed until
   * the handler returns.
   */
  handler_timeout: 503,
  /**
   * The dedup store failed or timed out. On the claim: nothing ran and nothing was marked done (a
   * claim the store took all the same holds the event until its lease ends, or until a late answer
   * gives it back: retries get 409 `in_flight` until then). On
   * the complete, after the handler succeeded: the event is not released, the receiver keeps trying
   * to record it in the background (retries get 409 `in_flight`, then a duplicate 200), and the
   * handler does not run again.
   */
  store_unavailable: 503,
  /**
   * Another request (or a timed-out run of this event) is handling it, or, with `ordering: true`,
   * another event of its email still ran after the wait; the sender retries after `Retry-After`.
   */
  in_flight: 409,
  /** The handler outlived its lease and another request took over; keep handlers well under `leaseMs`. */
  lease_lost: 409,
  /**
   * (Express, Hono, Fastify, Koa) an earlier body parser kept only parsed or decoded data; the
   * adapter's page in the docs says how to mount the route.
   */
  raw_body_unavailable: 500,
  /**
   * A reconciled event reached a receiver that cannot tell whether it was handled: turn
   * `ordering: true` on (with a store that keeps facts: every built-in store). Nothing ran.
   */
  reconcile_unsupported: 409,
}

/**
 * An authentic delivery could not be handled now: a handler threw or ran out of time, the
 * dedup store failed, or another worker holds the event. The answer is non-2xx, so the
 * sender retries; the original failure is kept as `cause`.
 */
export class WebhookHandlingError extends Error {
  override readonly name = 'WebhookHandlingError'
  readonly code: WebhookHandlingErrorCode
  readonly status: 409 | 500 | 503
  /**
   * `in_flight` from `createInboxProcessor`: when the event (or its email) is held elsewhere, the
   * time until its holder's lease can have ended. Delay the job that long without counting an
   * attempt (`bullmqProcessor` and `pgBossWork` do).
   */
  readonly retryAfterMs: number | undefined

  constructor(code: WebhookHandlingErrorCode, message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = HANDLING_STATUS[code]
    this.retryAfterMs = options?.retryAfterMs
  }
}

/** Why a queued item can never be processed: another namespace's key, or a payload that is not an event envelope. */
export type InboxItemErrorCode =
  /** The job's key belongs to another namespace than the processor's: give the processor the receiver's `namespace`. */
  | 'wrong_namespace'
  /** The job's payload is not the event envelope the receiver verified: fix the producer. */
  | 'invalid_item'

/**
 * A job of your queue that `createInboxProcessor(…).process()` can never handle, however often it
 * is tried: its key belongs to another namespace than the processor's, or its payload is not the
 * event envelope the receiver verified. Do not retry it: `bullmqProcessor` turns it into BullMQ's
 * `UnrecoverableError` and `pgBossWork` cancels the job; fix the processor's options (or the
 * producer), then add the job again.
 */
export class InboxItemError extends Error {
  override readonly name = 'InboxItemError'
  readonly code: InboxItemErrorCode
  /** Never: trying the item again gives the same error. */
  readonly retryable = false as const

  constructor(code: InboxItemErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}
