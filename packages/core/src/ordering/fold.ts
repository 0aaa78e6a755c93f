/**
 * `foldEmailEvents`: folds an email's events, in any arrival order, into its current state
 * (rules in email-state.ts and on the docs' Ordering page). Pure; bad input never throws.
 */
import {
  type EmailFold,
  type EmailMessageStatus,
  type EmailState,
  EVENT_EFFECTS,
  type EventEffect,
  type FoldedEvent,
  type IgnoredEvent,
  type IgnoredReason,
  isRecipientEffect,
  messageStatusMayChange,
  type RecipientState,
  recipientStatusMayChange,
} from './email-state.js'
import { compareEventIds, parseCreatedAt } from './position.js'

/** Options of {@link foldEmailEvents}. */
export interface FoldEmailEventsOptions {
  /** Fold only events of this email (`data.id`); default the email of the oldest event that has an effect. */
  emailId?: string
  /**
   * Reads the recipient address an event names. Default: `data.recipient` when it is a non-empty
   * string (trimmed). The sender does not guarantee any recipient field: adapt this to what yours carries.
   */
  recipientOf?: (event: { type: string; data: Record<string, unknown> }) => string | null | undefined
}

interface Candidate {
  index: number
  ref: FoldedEvent
  emailId: string
  effect: EventEffect
}

function defaultRecipientOf(event: { data: Record<string, unknown> }): string | null {
  const value = event.data.recipient
  return typeof value === 'string' && value.trim().length > 0 ? value.trim() : null
}

function compareStrings(a: string, b: string): number {
  return compareEventIds(a, b)
}

/** A total order on everything the state depends on, so that the fold is the same for every permutation. */
function compareCandidates(a: Candidate, b: Candidate): number {
  return (
    a.ref.createdAtMs - b.ref.createdAtMs ||
    a.effect.rank - b.effect.rank ||
    compareStrings(a.ref.eventId, b.ref.eventId) ||
    compareStrings(a.ref.type, b.ref.type) ||
    compareStrings(a.ref.createdAt, b.ref.createdAt) ||
    compareStrings(a.emailId, b.emailId) ||
    compareStrings(a.ref.recipient ?? '', b.ref.recipient ?? '') ||
    Number(a.ref.recipient === null) - Number(b.ref.recipient === null)
  )
}

type Checked = { candidate: Candidate } | { ignored: IgnoredEvent }

function check(raw: unknown, index: number, options: FoldEmailEventsOptions): Checked {
  const ignore = (reason: IgnoredReason, eventId: string | null = null, type: string | null = null): Checked => ({
    ignored: { index, eventId, type, reason },
  })
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return ignore('not_an_object')
  const event = raw as { id?: unknown; type?: unknown; created_at?: unknown; data?: unknown }
  const eventId = typeof event.id === 'string' && event.id.length > 0 ? event.id : null
  if (eventId === null) return ignore('event_id_invalid', null, typeof event.type === 'string' ? event.type : null)
  if (typeof event.type !== 'string') return ignore('type_not_string', eventId)
  const type = event.type
  const data =
    typeof event.data === 'object' && event.data !== null && !Array.isArray(event.data) ? (event.data as Record<string, unknown>) : null
  if (data === null || typeof data.id !== 'string' || data.id.length === 0) return ignore('email_id_not_string', eventId, type)
  const time = parseCreatedAt(event.created_at)
  if (!time.ok) return ignore(time.reason, eventId, type)
  if (!Object.hasOwn(EVENT_EFFECTS, type)) return ignore('no_state_effect', eventId, type)
  const effect = EVENT_EFFECTS[type] as EventEffect
  const found = isRecipientEffect(effect) ? (options.recipientOf ?? defaultRecipientOf)({ type, data }) : null
  const recipient = typeof found === 'string' && found.length > 0 ? found : null
  const ref: FoldedEvent = { eventId, type, createdAt: event.created_at as string, createdAtMs: time.ms, recipient }
  return { candidate: { index, ref, emailId: data.id, effect } }
}

function emptyState(emailId: string | null): EmailState {
  return { emailId, status: null, since: null, complained: false, recipients: {}, unattributed: [], events: [] }
}

function applyRecipient(recipients: Map<string, RecipientState>, address: string, ref: FoldedEvent, effect: EventEffect): void {
  let state = recipients.get(address)
  if (!state) {
    state = { address, status: null, since: null, complained: false }
    recipients.set(address, state)
  }
  if (effect.complaint) state.complained = true
  if (effect.recipient && recipientStatusMayChange(state.status, effect.recipient)) {
    state.status = effect.recipient
    state.since = ref
  }
}

function apply(state: EmailState, recipients: Map<string, RecipientState>, { ref, effect }: Candidate): void {
  state.events.push(ref)
  let next: EmailMessageStatus | undefined = effect.message
  if (effect.resolvesUncertain && state.status === 'uncertain') next = 'submitted'
  if (next !== undefined && messageStatusMayChange(state.status, next)) {
    state.status = next
    state.since = ref
  }
  if (effect.complaint) state.complained = true
  if (!isRecipientEffect(effect)) return
  if (ref.recipient === null) state.unattributed.push(ref)
  else applyRecipient(recipients, ref.recipient, ref, effect)
}

/**
 * Folds one email's events, in any arrival order, into its current state; every permutation of
 * the same events gives the same `state`. The rules (also on the docs' Ordering page):
 *
 * | # | Rule |
 * | - | ---- |
 * | 1 | Events apply oldest first by `created_at` (whole ms; an offset is required, digits past the ms are dropped). |
 * | 2 | In one millisecond: by type precedence — queued, submitting, deferred, uncertain, submitted, submission_recovered, recipient_deferred, recipient_resubmitted, recipient_accepted, bounced, complained, rejected, cancelled — then by event id (code-point order). |
 * | 3 | Message status: the newest event that sets one decides (queued, submitting, submitted, deferred, uncertain, rejected, bounced, cancelled; `email.bounced` sets `bounced`). |
 * | 4 | A terminal status (rejected, bounced, cancelled) is replaced only by a newer terminal status. |
 * | 5 | `submission_recovered` turns `uncertain` into `submitted`, and does nothing otherwise. |
 * | 6 | Recipient events (recipient_accepted/deferred/resubmitted, bounced, complained) apply per address (`data.recipient` or `recipientOf`); without one they go to `unattributed`. They never set the message status, except `bounced` (rule 3). |
 * | 7 | Recipient status: `deferred`/`resubmitted` yield to any newer recipient event, `accepted` only to a newer `bounced`, `bounced` to nothing. |
 * | 8 | A complaint sets `complained` on the message (and the recipient); it changes no status. |
 * | 9 | Of events sharing an id, the one that sorts first counts; the others are `duplicate_event_id`. |
 * | 10 | Only one email is folded: `emailId`, or the email of the oldest event with an effect; others are `other_email`. |
 * | 11 | Unusable input (not an object; `id`, `type` or `data.id` not a string; `created_at` missing or unparseable) and types without an effect are listed in `ignored` with a reason; nothing throws. |
 *
 * @param events The events, in any order: parsed envelopes or rows `{ id, type, created_at, data }`.
 * @param options `emailId` (default: the email of the oldest event with an effect) and `recipientOf` (default `data.recipient`).
 * @returns `{ state, ignored }`.
 * @throws Only what your `recipientOf` throws.
 * @example
 * const { state } = foldEmailEvents(await db.eventsOf(emailId), { emailId })
 * if (state.status === 'bounced') await suppress(emailId)
 */
export function foldEmailEvents(events: Iterable<unknown>, options: FoldEmailEventsOptions = {}): EmailFold {
  const ignored: IgnoredEvent[] = []
  const candidates: Candidate[] = []
  let index = 0
  for (const raw of events) {
    const checked = check(raw, index++, options)
    if ('ignored' in checked) ignored.push(checked.ignored)
    else candidates.push(checked.candidate)
  }
  candidates.sort(compareCandidates)
  const emailId = options.emailId ?? candidates[0]?.emailId ?? null
  const state = emptyState(emailId)
  const recipients = new Map<string, RecipientState>()
  const seen = new Set<string>()
  for (const candidate of candidates) {
    const { ref } = candidate
    if (candidate.emailId !== emailId) ignored.push({ index: candidate.index, eventId: ref.eventId, type: ref.type, reason: 'other_email' })
    else if (seen.has(ref.eventId))
      ignored.push({ index: candidate.index, eventId: ref.eventId, type: ref.type, reason: 'duplicate_event_id' })
    else {
      seen.add(ref.eventId)
      apply(state, recipients, candidate)
    }
  }
  const addresses = [...recipients.keys()].sort(compareStrings)
  state.recipients = Object.fromEntries(addresses.map((address) => [address, recipients.get(address) as RecipientState]))
  ignored.sort((a, b) => a.index - b.index)
  return { state, ignored }
}
