/**
 * What the CLI puts in the events it generates: `data.id` (the email), a `data.recipient` for the
 * events about one recipient (the CLI's own test data: SPEC.md leaves the sender's per-event keys
 * undocumented), and the `created_at` that `send --created-at` chooses.
 */
import { parseCreatedAt, type WebhookEvent } from '@email-webhooks/core'
import { createEvent } from '@email-webhooks/core/testing'
import { InvalidArgumentError } from 'commander'

/** The address in `data.recipient` of generated recipient, bounce and complaint events (a reserved example.com one). */
export const TEST_RECIPIENT = 'recipient@example.com'

const UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const RELATIVE = /^([+-])(\d+)(s|m|h|d)$/

/**
 * Whether an event of this type is about one recipient: `email.recipient_*`, `email.bounced`, `email.complained`.
 * @example
 * isRecipientEvent('email.bounced') // true
 */
export function isRecipientEvent(type: string): boolean {
  return type.startsWith('email.recipient_') || type === 'email.bounced' || type === 'email.complained'
}

/**
 * Generates an event as `send` and a load send it: a fresh event id, `data.id` the email, and
 * `data.recipient` ({@link TEST_RECIPIENT}) for the events about one recipient.
 * @param type The event type.
 * @param emailId The email's id (`data.id`).
 * @param createdAt The envelope's `created_at` (default now).
 * @example
 * generateEvent('email.bounced', emailId) // { id, type, created_at, data: { id: emailId, recipient: 'recipient@example.com' } }
 */
export function generateEvent(type: string, emailId: string, createdAt?: string): WebhookEvent {
  const data = isRecipientEvent(type) ? { id: emailId, recipient: TEST_RECIPIENT } : { id: emailId }
  return createEvent(type, { data, ...(createdAt === undefined ? {} : { created_at: createdAt }) })
}

/** The furthest a relative `--created-at` may reach, either way: 10 years (of 365.25 days). */
export const RELATIVE_LIMIT_MS: number = 10 * 365.25 * 86_400_000

/** A date alone, `2026-11-20`: taken as midnight UTC, as `emails reconcile --since` takes it. */
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/

/**
 * Parses `--created-at` (a commander argParser): an RFC 3339 date-time with an offset, kept as
 * written (`2026-11-20T08:00:00Z`), a date alone (`2026-11-20`, sent as `2026-11-20T00:00:00Z`:
 * midnight UTC), or a time relative to now (`-5m`, `-2h`, `+30s`, `-1d`, at most 10 years either
 * way), turned into an ISO date-time.
 * @param value The option's text.
 * @param nowMs The current time (default now).
 * @throws {InvalidArgumentError} when it is none of these, with the forms it takes; or when a relative time is more than 10 years away, saying why.
 * @example
 * parseCreatedAtOption('-5m') // five minutes ago, e.g. '2026-11-25T09:40:00.000Z'
 * parseCreatedAtOption('2026-11-20') // '2026-11-20T00:00:00Z'
 */
export function parseCreatedAtOption(value: string, nowMs: number = Date.now()): string {
  const text = value.trim()
  const relative = RELATIVE.exec(text)
  if (relative) {
    const ms = Number(relative[2]) * (UNITS[relative[3] as string] as number) * (relative[1] === '-' ? -1 : 1)
    if (!Number.isSafeInteger(ms) || Math.abs(ms) > RELATIVE_LIMIT_MS)
      throw new InvalidArgumentError(
        `${text} is more than 10 years from now. With ordering on, an event that far in the future makes every later event of that email stale (skipped), and one that far back is no realistic late event. Give a relative time within 10 years (e.g. -5m, -2h, +30s, -1d, -3652d), or a date-time.`,
      )
    return new Date(nowMs + ms).toISOString()
  }
  const written = DATE_ONLY.test(text) ? `${text}T00:00:00Z` : text
  if (parseCreatedAt(written).ok) return written
  throw new InvalidArgumentError(
    'Give a date-time with an offset (2026-11-20T08:00:00Z), a date (2026-11-20, midnight UTC) or a time relative to now: a sign, a whole number and a unit (-5m, -2h, +30s, -1d).',
  )
}
