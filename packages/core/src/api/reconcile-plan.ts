/**
 * What reconcile does with one email's `events` list, decided before anything is sent: each usable
 * entry gets its index among the entries of its type and `created_at` millisecond (in list order)
 * and its deterministic event id; entries the receiver can no longer recognise (older than its
 * retention) are set apart; unusable entries (no string type, a type that is not `email.*`, no
 * parseable `created_at`, `details` not an object) are reported, never guessed at. The rest go
 * oldest first (list order within a millisecond), so the email never moves backwards.
 */
import { parseCreatedAt } from '../ordering/position.js'
import type { EmailStatus } from './emails.js'
import { reconcileEventId } from './reconcile-id.js'

/**
 * How far the receiver's clock may be from reconcile's and still accept its signatures (the
 * signature window, 300 s): an event this close to the end of the receiver's retention is
 * treated as too old, since the receiver may already have forgotten it by the time it arrives.
 */
export const RECONCILE_CLOCK_MARGIN_MS = 300_000

/** Why an entry of the `events` list was not used. */
export type EntryProblem =
  | 'not_an_object'
  | 'type_missing'
  /** Not an `email.*` type: the receiver keeps facts (what reconcile relies on) only for email events. */
  | 'type_not_email'
  | 'created_at_missing'
  | 'created_at_unparseable'
  | 'details_not_an_object'

/** An entry of an email's `events` list that reconcile did not use, and why. */
export interface InvalidEntry {
  /** Its position (0-based) in the list. */
  entry: number
  problem: EntryProblem
  /** Its `type`, when it is a string. */
  type?: string
  /** Its `created_at`, when it is a string. */
  createdAt?: string
}

/** An entry reconcile can send. */
export interface PlannedEvent {
  /** The deterministic event id (`webhook-id`), see `reconcileEventId`. */
  eventId: string
  type: string
  /** `created_at` as the list gives it (sent unchanged). */
  createdAt: string
  createdAtMs: number
  /** Its position among the email's entries of the same type and millisecond: the envelope's `email_webhooks_reconcile.index`. */
  index: number
  details: Record<string, unknown>
  /** Its position (0-based) in the list. */
  entry: number
}

/** The decision for every entry of one email. */
export interface EmailPlan {
  /** To send, oldest first. */
  toSend: PlannedEvent[]
  /** Older than the receiver's retention (less the clock margin): it cannot tell any more whether they were handled. */
  tooOld: PlannedEvent[]
  invalid: InvalidEntry[]
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Plans the events of one email.
 * @param email The email as `getEmail` returned it (its `id` is the one the events carry as `data.id`).
 * @param nowMs The current time in ms.
 * @param retentionMs The receiver's `retentionMs`.
 * @returns What to send (oldest first), what is too old, and the unusable entries.
 * @throws Never.
 * @example
 * const { toSend } = await planEmail(email, Date.now(), DEFAULT_RECONCILE_RETENTION_MS)
 */
export async function planEmail(email: EmailStatus, nowMs: number, retentionMs: number): Promise<EmailPlan> {
  const plan: EmailPlan = { toSend: [], tooOld: [], invalid: [] }
  const seen = new Map<string, number>()
  const usable: PlannedEvent[] = []
  const oldest = nowMs - retentionMs + RECONCILE_CLOCK_MARGIN_MS
  for (const [entry, raw] of email.events.entries()) {
    if (!isObject(raw)) {
      plan.invalid.push({ entry, problem: 'not_an_object' })
      continue
    }
    const type = typeof raw.type === 'string' && raw.type !== '' ? raw.type : undefined
    const createdAt = typeof raw.created_at === 'string' ? raw.created_at : undefined
    const shown = { ...(type === undefined ? {} : { type }), ...(createdAt === undefined ? {} : { createdAt }) }
    if (type === undefined) {
      plan.invalid.push({ entry, problem: 'type_missing', ...shown })
      continue
    }
    if (!type.startsWith('email.')) {
      plan.invalid.push({ entry, problem: 'type_not_email', ...shown })
      continue
    }
    const time = parseCreatedAt(raw.created_at)
    if (!time.ok) {
      plan.invalid.push({ entry, problem: time.reason, ...shown })
      continue
    }
    // Counted before `details` is checked: the receiver counted that event too, whatever its data.
    const slot = `${type}|${time.ms}`
    const index = seen.get(slot) ?? 0
    seen.set(slot, index + 1)
    const details = raw.details ?? {}
    if (!isObject(details)) {
      plan.invalid.push({ entry, problem: 'details_not_an_object', ...shown })
      continue
    }
    const eventId = await reconcileEventId(email.id, type, time.ms, index)
    usable.push({ eventId, type, createdAt: createdAt as string, createdAtMs: time.ms, index, details, entry })
  }
  usable.sort((a, b) => a.createdAtMs - b.createdAtMs || a.entry - b.entry)
  for (const event of usable) (event.createdAtMs <= oldest ? plan.tooOld : plan.toSend).push(event)
  return plan
}
