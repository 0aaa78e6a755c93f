/**
 * The faithful sender's emails, the source of truth `GET /emails/{id}` serves: every email event
 * it emits is kept in its email's `events` list (`{ type, created_at, details }`), whatever its
 * endpoints' state (an event emitted while an endpoint is disabled gets no delivery record, but it
 * is here), and the email's `state` follows its events in the order they were emitted. Past the
 * log retention (counted from the email's creation, on the sender's clock) an email is a 404.
 */
import type { WebhookEvent } from '@email-webhooks/core'
import type { SenderEmail, SenderEmailEvent } from './sender-types.js'

/** Message states that end an email: a later non-terminal event does not move it back. */
const TERMINAL: ReadonlySet<string> = new Set(['rejected', 'bounced', 'cancelled'])

/** The message state an event type sets, as the service documents its types. */
const MESSAGE_STATE: Readonly<Record<string, string>> = Object.freeze({
  'email.queued': 'queued',
  'email.submitting': 'submitting',
  'email.submitted': 'submitted',
  'email.deferred': 'deferred',
  'email.uncertain': 'uncertain',
  'email.rejected': 'rejected',
  'email.bounced': 'bounced',
  'email.cancelled': 'cancelled',
})

/** The state a recipient event sets. */
const RECIPIENT_STATE: Readonly<Record<string, string>> = Object.freeze({
  'email.recipient_accepted': 'accepted',
  'email.recipient_deferred': 'deferred',
  'email.recipient_resubmitted': 'resubmitted',
  'email.bounced': 'bounced',
})

interface Email {
  status: SenderEmail
  createdAtMs: number
}

/** The emails the sender emitted events for. */
export class EmailLog {
  readonly #emails = new Map<string, Email>()

  /** Keeps an email event (`email.*` with a string `data.id`) in its email's list; others are not email events. */
  record(event: WebhookEvent, createdAtMs: number): void {
    const data = event.data as Record<string, unknown>
    const id = data?.id
    if (typeof id !== 'string' || id === '' || typeof event.type !== 'string' || !event.type.startsWith('email.')) return
    let email = this.#emails.get(id.toLowerCase())
    if (!email) {
      email = { status: newEmail(id, event.created_at), createdAtMs }
      this.#emails.set(id.toLowerCase(), email)
    }
    const { id: _id, ...details } = data
    const entry: SenderEmailEvent = { type: event.type, created_at: event.created_at, details }
    email.status.events.push(entry)
    apply(email.status, entry)
  }

  /** The email's status (the id in either case, as UUIDs compare), or undefined when unknown or older than `retentionMs` at `nowMs`. */
  get(id: string, nowMs: number, retentionMs: number): SenderEmail | undefined {
    const email = this.#emails.get(id.toLowerCase())
    if (!email || nowMs - email.createdAtMs > retentionMs) return undefined
    return structuredClone(email.status)
  }
}

function newEmail(id: string, createdAt: string): SenderEmail {
  return {
    id,
    state: 'queued',
    message_id: null,
    created_at: createdAt,
    scheduled_at: null,
    submitted_at: null,
    smtp_code: null,
    diagnostic: null,
    recipients: [],
    recipient_retry: null,
    events: [],
  }
}

/** Moves the email's state and recipients after one event, in emission order. */
function apply(email: SenderEmail, event: SenderEmailEvent): void {
  const next = MESSAGE_STATE[event.type]
  if (next !== undefined && (!TERMINAL.has(email.state) || TERMINAL.has(next))) email.state = next
  if (event.type === 'email.submission_recovered' && email.state === 'uncertain') email.state = 'submitted'
  if (email.state === 'submitted' && email.submitted_at === null) email.submitted_at = event.created_at
  const recipientState = RECIPIENT_STATE[event.type]
  const address = event.details.recipient
  if (recipientState === undefined || typeof address !== 'string' || address === '') return
  let recipient = email.recipients.find((r) => r.address === address)
  if (!recipient) {
    recipient = { address, kind: 'to', state: recipientState, enhanced_status: null, remote_response: null, observed_at: null }
    email.recipients.push(recipient)
  }
  if (recipient.state !== 'bounced' && !(recipient.state === 'accepted' && recipientState !== 'bounced')) recipient.state = recipientState
  recipient.observed_at = event.created_at
}
