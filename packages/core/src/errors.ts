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
  missing_header: 401,
  duplicate_header: 401,
  malformed_id: 401,
  malformed_timestamp: 401,
  malformed_signature: 401,
  timestamp_too_old: 401,
  timestamp_too_new: 401,
  signature_mismatch: 401,
  invalid_body: 401,
  invalid_envelope: 400,
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
  handler_failed: 500,
  handler_timeout: 503,
  store_unavailable: 503,
  in_flight: 409,
  lease_lost: 409,
  raw_body_unavailable: 500,
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
export type InboxItemErrorCode = 'wrong_namespace' | 'invalid_item'

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
