/** The answers the receiver sends: statuses, headers and the small JSON bodies (never the secret, signature or body). */
import { WebhookHandlingError, WebhookVerificationError } from '../errors.js'
import type { WebhookEvent } from '../events.js'
import type { ReceiveOutcome, ReceiverResponse } from './types.js'

const OK_BODY = '{"ok":true}'
const DUPLICATE_BODY = '{"ok":true,"duplicate":true}'
const IGNORED_BODY = '{"ok":true,"ignored":"invalid_envelope"}'
const STALE_BODY = '{"ok":true,"skipped":"stale"}'
const QUEUED_BODY = '{"ok":true,"queued":true}'

function jsonHeaders(): Record<string, string> {
  return { 'content-type': 'application/json' }
}

/** 200 after the handler ran and the event was recorded. */
export function okAnswer(event: WebhookEvent, outcome: ReceiveOutcome): ReceiverResponse {
  return { status: 200, headers: jsonHeaders(), body: OK_BODY, outcome, event }
}

/** 200 to a stale event skipped by `skipStale`: recorded as done, no handler ran. */
export function staleSkippedAnswer(event: WebhookEvent): ReceiverResponse {
  return { status: 200, headers: jsonHeaders(), body: STALE_BODY, outcome: 'skipped', event }
}

/** 200 in inbox mode once the event is recorded in the inbox: its handlers run after the answer. */
export function queuedAnswer(event: WebhookEvent): ReceiverResponse {
  return { status: 200, headers: jsonHeaders(), body: QUEUED_BODY, outcome: 'queued', event }
}

/** 200 to a redelivery of an event already handled. */
export function duplicateAnswer(event: WebhookEvent | undefined): ReceiverResponse {
  const answer: ReceiverResponse = { status: 200, headers: jsonHeaders(), body: DUPLICATE_BODY, outcome: 'duplicate' }
  if (event) answer.event = event
  return answer
}

/** 200 to a signed, in-window body that is not a valid envelope: recorded so its resends stay quiet. */
export function ignoredAnswer(): ReceiverResponse {
  return { status: 200, headers: jsonHeaders(), body: IGNORED_BODY, outcome: 'ignored', code: 'invalid_envelope' }
}

/** The last sentence of a failure's message whose cause is the error's `cause` (those messages end with it). */
export const SEE_CAUSE = " See the error's cause."

/**
 * An error's message as the answer's body says it: the sender (or whoever sent the request) has no
 * error object, so {@link SEE_CAUSE} there becomes where the receiver said the cause.
 */
function answeredMessage(message: string): string {
  return message.endsWith(SEE_CAUSE)
    ? `${message.slice(0, -SEE_CAUSE.length)} The cause is in the receiver's log (or went to its onError).`
    : message
}

/** The non-2xx answer for a refusal or a failure; `Retry-After` in whole seconds (at least 1) when given. */
export function errorAnswer(
  error: WebhookVerificationError | WebhookHandlingError,
  event?: WebhookEvent,
  retryAfterMs?: number,
): ReceiverResponse {
  const headers = jsonHeaders()
  if (retryAfterMs !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)))
  const answer: ReceiverResponse = {
    status: error.status,
    headers,
    body: JSON.stringify({ error: { code: error.code, message: answeredMessage(error.message) } }),
    outcome: error instanceof WebhookVerificationError ? 'rejected' : 'retry',
    code: error.code,
  }
  if (event) answer.event = event
  const cause = (error as { cause?: unknown }).cause
  if (cause !== undefined) answer.cause = cause
  return answer
}

/** The refusal of a body over `maxBodyBytes` (413), for adapters that refuse it while reading. */
export function bodyTooLargeError(maxBodyBytes: number): WebhookVerificationError {
  return new WebhookVerificationError(
    'body_too_large',
    `The body is larger than maxBodyBytes (${maxBodyBytes} bytes). Raise maxBodyBytes if the events are legitimately this large.`,
  )
}

/**
 * A 503 `store_unavailable` after the event's work was done (its handler succeeded, or nothing had
 * to run) and the store failed to record it: the receiver keeps trying in the background.
 */
export function notRecorded(cause: unknown, timedOutAfterMs?: number): WebhookHandlingError {
  const reason = timedOutAfterMs !== undefined ? `did not answer within storeTimeoutMs (${timedOutAfterMs} ms)` : 'failed'
  return new WebhookHandlingError(
    'store_unavailable',
    `The event was handled, but recording it in the dedup store ${reason}. The receiver keeps trying to record it in the background: the sender's retries get 409 in_flight until it lands, then a duplicate 200, and the handler does not run again.${SEE_CAUSE}`,
    { cause },
  )
}

/**
 * A 503 `store_unavailable` keeping the store's failure as cause; `claim` when it was the claim that
 * failed or was given up on (one the store took all the same holds the event until its lease ends,
 * or until it is given back: a late answer is).
 */
export function storeUnavailable(cause: unknown, timedOutAfterMs?: number, claim = false): WebhookHandlingError {
  const reason = timedOutAfterMs !== undefined ? `did not answer within storeTimeoutMs (${timedOutAfterMs} ms)` : 'failed'
  const held = claim
    ? ' Should the claim have reached the store all the same, the event stays claimed until its lease ends (leaseMs) unless a late answer gives it back (the PostgreSQL, Redis and DynamoDB stores also give back a claim whose answer they lost, once the server answers again), and the retries until then get 409 in_flight.'
    : ''
  return new WebhookHandlingError(
    'store_unavailable',
    `The dedup store ${reason}; nothing was marked done and the sender will retry.${held}${SEE_CAUSE}`,
    { cause },
  )
}
