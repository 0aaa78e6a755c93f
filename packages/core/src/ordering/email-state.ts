/**
 * Types and rules of the email state fold: the sender's message states (SPEC.md), per-recipient
 * states, and the precedence of each event type. The fold itself lives in fold.ts.
 */

/** The sender's message states, in lifecycle order (SPEC.md). */
export const EMAIL_MESSAGE_STATUSES = [
  'queued',
  'submitting',
  'submitted',
  'deferred',
  'uncertain',
  'rejected',
  'bounced',
  'cancelled',
] as const

/** One of the sender's message states. */
export type EmailMessageStatus = (typeof EMAIL_MESSAGE_STATUSES)[number]

/** Message states that only a newer terminal state replaces. */
export const TERMINAL_MESSAGE_STATUSES: readonly EmailMessageStatus[] = ['rejected', 'bounced', 'cancelled']

/** A recipient's delivery state, from the recipient events that name it. */
export type RecipientStatus = 'deferred' | 'resubmitted' | 'accepted' | 'bounced'

/** One folded event, as the state refers to it. */
export interface FoldedEvent {
  eventId: string
  type: string
  /** `created_at` as it arrived. */
  createdAt: string
  /** `created_at` in ms since the epoch. */
  createdAtMs: number
  /** The recipient address the event names, or `null` (not guaranteed by the sender; none for message events). */
  recipient: string | null
}

/** The state of one recipient. */
export interface RecipientState {
  address: string
  /** `null` when only a complaint names this recipient. */
  status: RecipientStatus | null
  /** The event that set `status`. */
  since: FoldedEvent | null
  /** A complaint named this recipient. */
  complained: boolean
}

/** An email's current state, the same for every arrival order of the same events. */
export interface EmailState {
  /** The email id (`data.id`) the events were folded for; `null` when no event counted. */
  emailId: string | null
  /** The message state; `null` when no event sets one (e.g. only recipient events arrived). */
  status: EmailMessageStatus | null
  /** The event that set `status`. */
  since: FoldedEvent | null
  /** Any complaint was reported (with or without a recipient). */
  complained: boolean
  /** Recipients named by recipient events, keyed by address as given (not case-folded). */
  recipients: Record<string, RecipientState>
  /** Recipient events (accepted, deferred, resubmitted, bounced, complained) that name no recipient, oldest first. */
  unattributed: FoldedEvent[]
  /** Every folded event in fold order (oldest first, ties by precedence then event id). */
  events: FoldedEvent[]
}

/** Why an input event did not count. */
export type IgnoredReason =
  | 'not_an_object'
  | 'event_id_invalid'
  | 'type_not_string'
  | 'created_at_missing'
  | 'created_at_unparseable'
  | 'email_id_not_string'
  /** Its `data.id` is not the folded email's. */
  | 'other_email'
  /** A second event with an event id already folded (the one that sorts first is kept). */
  | 'duplicate_event_id'
  /** A type with no effect on the state (a future or non-email type). */
  | 'no_state_effect'

/** An input event that did not count, and why. */
export interface IgnoredEvent {
  /** Its index in the input. */
  index: number
  eventId: string | null
  type: string | null
  reason: IgnoredReason
}

/** Result of `foldEmailEvents`: the state, and the events that did not count (by input index). */
export interface EmailFold {
  state: EmailState
  ignored: IgnoredEvent[]
}

/** What one event type does. `rank` orders events of the same millisecond (higher = applied later). */
export interface EventEffect {
  rank: number
  /** The message state it sets (subject to the terminal rule), if any. */
  message?: EmailMessageStatus
  /** `submission_recovered`: sets `submitted` only while the status is `uncertain`. */
  resolvesUncertain?: true
  /** The recipient state it sets, if any. */
  recipient?: RecipientStatus
  /** A complaint. */
  complaint?: true
}

/**
 * The effect of each event type. `email.submitting` and `email.cancelled` are not emitted today;
 * they map to their states if the sender starts emitting them.
 */
export const EVENT_EFFECTS: Readonly<Record<string, EventEffect>> = Object.freeze({
  'email.queued': { rank: 0, message: 'queued' },
  'email.submitting': { rank: 1, message: 'submitting' },
  'email.deferred': { rank: 2, message: 'deferred' },
  'email.uncertain': { rank: 3, message: 'uncertain' },
  'email.submitted': { rank: 4, message: 'submitted' },
  'email.submission_recovered': { rank: 5, resolvesUncertain: true },
  'email.recipient_deferred': { rank: 6, recipient: 'deferred' },
  'email.recipient_resubmitted': { rank: 7, recipient: 'resubmitted' },
  'email.recipient_accepted': { rank: 8, recipient: 'accepted' },
  'email.bounced': { rank: 9, message: 'bounced', recipient: 'bounced' },
  'email.complained': { rank: 10, complaint: true },
  'email.rejected': { rank: 11, message: 'rejected' },
  'email.cancelled': { rank: 12, message: 'cancelled' },
} satisfies Record<string, EventEffect>)

/** Event types whose effect is on a recipient (their recipient address is looked up). */
export function isRecipientEffect(effect: EventEffect): boolean {
  return effect.recipient !== undefined || effect.complaint === true
}

/**
 * True when `next` may replace the message status `current`: anything replaces nothing or a
 * non-terminal status; a terminal status is replaced only by another terminal one (events are
 * applied oldest first, so that one is newer).
 */
export function messageStatusMayChange(current: EmailMessageStatus | null, next: EmailMessageStatus): boolean {
  if (current === null || !TERMINAL_MESSAGE_STATUSES.includes(current)) return true
  return TERMINAL_MESSAGE_STATUSES.includes(next)
}

/**
 * True when `next` may replace the recipient status `current`: `deferred` and `resubmitted` are
 * replaced by any newer recipient event; `accepted` only by a newer `bounced`; `bounced` is final.
 */
export function recipientStatusMayChange(current: RecipientStatus | null, next: RecipientStatus): boolean {
  if (current === null || current === 'deferred' || current === 'resubmitted') return true
  return current === 'accepted' && next === 'bounced'
}
