/**
 * The email read of the sender's API (`GET /emails/{id}`, scope `emails:read`), typed after
 * SPEC.md: the email's status and its `events` list (`{ type, created_at, details }`, no event id)
 * for the plan's log-retention window. Every field the service adds is kept as it came. A 404 is
 * a typed result (outside the retention window, or another organization's email), not an error.
 */

/** The scope `GET /emails/{id}` needs. */
export const EMAILS_SCOPE = 'emails:read'

/** An email id as `POST /emails` returns it: a UUID (any version; either case). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Whether `value` is a UUID (8-4-4-4-12 hex digits, either case): the shape of an email id.
 *
 * @param value Anything.
 * @returns True for a UUID string.
 * @throws Never.
 * @example
 * isUuid('0c1f6d2e-6b53-4f4e-9a77-1b8f1d8c2a10') // true
 */
export function isUuid(value: unknown): boolean {
  return typeof value === 'string' && UUID.test(value)
}

/** One entry of an email's `events` list. The service gives no event id; `details` is free. */
export interface EmailStatusEvent {
  /** An email event kind, e.g. `email.bounced` (new kinds may appear). */
  type: string
  /** ISO 8601 date-time. */
  created_at: string
  /** Free object; the keys depend on the event and are not documented. */
  details: Record<string, unknown>
  /** Fields the service adds later, kept as they came. */
  [field: string]: unknown
}

/** A recipient of the email as the status lists it. */
export interface EmailRecipient {
  address: string
  kind: 'to' | 'cc' | 'bcc'
  /** e.g. `accepted` (the destination server accepted it: not a read receipt), `deferred`, `bounced`. */
  state: string
  enhanced_status: string | null
  remote_response: string | null
  observed_at: string | null
  [field: string]: unknown
}

/** The retry state of deferred recipients, when there is one. */
export interface EmailRecipientRetry {
  state: string
  attempts: number
  next_attempt_at: string | null
  error_code: string | null
  [field: string]: unknown
}

/**
 * An email's status as `GET /emails/{id}` returns it. The client checks only `id` (a string) and
 * `events` (an array); the rest is typed as the service documents it, and anything it adds is kept.
 * `reconcileEmails` checks each `events` entry itself and reports an unusable one.
 */
export interface EmailStatus {
  /** The email's UUID, as the service spells it (its events carry this as `data.id`). */
  id: string
  /** queued, submitting, submitted, deferred, uncertain, rejected, bounced, cancelled (new ones may appear). */
  state: string
  message_id: string | null
  created_at: string
  scheduled_at: string | null
  submitted_at: string | null
  smtp_code: number | null
  diagnostic: string | null
  recipients: EmailRecipient[]
  recipient_retry: EmailRecipientRetry | null
  /** The email's events within the retention window, as the service lists them. */
  events: EmailStatusEvent[]
  /** Fields the service adds later, kept as they came. */
  [field: string]: unknown
}

/** What `getEmail` resolves to: the email, or a 404 (outside retention, or not this organization's email). */
export type GetEmailResult =
  | { found: true; email: EmailStatus; requestId: string }
  | {
      found: false
      /** The service's code (`not_found`). */
      code: string
      /** The 404's request id, when the service gave one. */
      requestId: string | undefined
    }

/**
 * Whether an answer has the shape of an email status: an object with a string `id` and an array
 * `events`. The rest is kept as it came (new fields are compatible additions).
 */
export function isEmailStatus(json: unknown): json is EmailStatus {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return false
  const email = json as { id?: unknown; events?: unknown }
  return typeof email.id === 'string' && Array.isArray(email.events)
}
