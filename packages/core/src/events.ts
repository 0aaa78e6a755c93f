/**
 * Event types of the email service, derived from one const array, and the strict parser of
 * the event envelope `{ id, type, created_at, data }`. Unknown fields are kept; unknown
 * types are valid `WebhookEvent`s so that future kinds can be acknowledged.
 */
import { WebhookVerificationError } from './errors.js'

/** The email event types the service emits today (SPEC.md). New ones may appear at any time. */
export const EMAIL_EVENT_TYPES = [
  'email.queued',
  'email.submitted',
  'email.deferred',
  'email.uncertain',
  'email.rejected',
  'email.recipient_accepted',
  'email.recipient_deferred',
  'email.recipient_resubmitted',
  'email.bounced',
  'email.submission_recovered',
  'email.complained',
] as const

/** One of the known email event types, e.g. `'email.bounced'`. */
export type EmailEventType = (typeof EMAIL_EVENT_TYPES)[number]

/** `data` of an email event: `id` is the email's id (from `POST /emails`); other keys are not guaranteed. */
export interface EmailEventData {
  id: string
  [key: string]: unknown
}

/** Any verified event envelope, including types this version does not know yet. */
export interface WebhookEvent {
  /** The event id; equal to the `webhook-id` header. */
  id: string
  type: string
  /** ISO 8601 date-time. */
  created_at: string
  data: { [key: string]: unknown }
  [key: string]: unknown
}

/** The envelope of one email event type. */
export interface EmailEventOf<T extends EmailEventType> extends WebhookEvent {
  type: T
  data: EmailEventData
}

/** Any known email event, discriminated on `type`. */
export type EmailEvent = { [T in EmailEventType]: EmailEventOf<T> }[EmailEventType]

const KNOWN_TYPES: ReadonlySet<string> = new Set(EMAIL_EVENT_TYPES)

/** True when `type` is one of {@link EMAIL_EVENT_TYPES}. */
export function isEmailEventType(type: string): type is EmailEventType {
  return KNOWN_TYPES.has(type)
}

/** True when the event is a known email event (narrows to {@link EmailEvent}). */
export function isEmailEvent(event: WebhookEvent): event is EmailEvent {
  return KNOWN_TYPES.has(event.type)
}

const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false })

function invalid(message: string, cause?: unknown): WebhookVerificationError {
  return new WebhookVerificationError('invalid_envelope', message, cause === undefined ? undefined : { cause })
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Parses a verified body into an event envelope. Invalid UTF-8 is replaced (the signature
 * already vouches for the bytes), a leading BOM is ignored, unknown fields are kept.
 *
 * @param body The raw body (bytes or string) that was verified.
 * @param expectedId The verified `webhook-id`; the envelope's `id` must equal it.
 * @throws {WebhookVerificationError} `invalid_envelope` (status 400) when the body is not an envelope.
 * @example
 * const event = parseEnvelope(bytes, verified.id)
 */
export function parseEnvelope(body: string | Uint8Array | ArrayBuffer, expectedId: string): WebhookEvent {
  // The decoder drops a leading BOM from bytes; a string body may still carry one.
  const text = typeof body === 'string' ? (body.charCodeAt(0) === 0xfeff ? body.slice(1) : body) : decoder.decode(body)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    // The SyntaxError is not kept as cause: V8 quotes the body in its message, and nothing we
    // return or report may contain the body.
    throw invalid('The signed body is not valid JSON; an event envelope { id, type, created_at, data } was expected.')
  }
  if (!isPlainObject(value))
    throw invalid('The signed body is not a JSON object; an event envelope { id, type, created_at, data } was expected.')
  if (typeof value.id !== 'string') throw invalid('The envelope has no string "id".')
  if (value.id !== expectedId) throw invalid('The envelope "id" differs from the webhook-id header; both must name the same event.')
  if (typeof value.type !== 'string' || value.type.length === 0) throw invalid('The envelope has no string "type".')
  if (typeof value.created_at !== 'string') throw invalid('The envelope has no string "created_at".')
  if (!isPlainObject(value.data)) throw invalid('The envelope has no object "data".')
  if (KNOWN_TYPES.has(value.type) && typeof value.data.id !== 'string') {
    throw invalid(`The envelope of a ${value.type} event has no string "data.id" (the email id).`)
  }
  return value as WebhookEvent
}
