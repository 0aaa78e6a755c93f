/**
 * The requests `send` makes for each mode: what is signed, how it is spoiled, and what a
 * correct receiver answers (the natural expectation, unless --expect overrides it).
 */
import { parseCreatedAt, signWebhook, type WebhookEvent } from '@email-webhooks/core'
import { UNKNOWN_EVENT_TYPE } from '@email-webhooks/core/testing'
import { generateEvent } from './event-data.js'
import type { Expectation } from './expect.js'
import type { Delivery } from './http.js'
import { describeBody } from './input.js'

/** Seconds outside the ±300 s window used by --old-timestamp and --future (clear of small clock skews). */
export const SKEW_SECONDS = 600

/** The modes of a single `send` (`--stale`, the old name of `--old-timestamp`, is mapped to it). */
export const MODES = ['duplicate', 'oldTimestamp', 'future', 'tampered', 'wrongSecret', 'unknownType', 'outOfOrder'] as const
/** One of {@link MODES}, or `plain` for one authentic delivery. */
export type Mode = (typeof MODES)[number] | 'plain'

/** The lifecycle of one email sent by --out-of-order, in the order the events happen. */
export const LIFECYCLE = [
  'email.queued',
  'email.submitted',
  'email.recipient_deferred',
  'email.recipient_resubmitted',
  'email.recipient_accepted',
] as const

/** One request to make and how to judge its answer. */
export interface PlannedRequest {
  label: string
  delivery: Delivery
  webhookId: string
  type: string | undefined
  expected: Expectation
  /** Why a correct receiver answers its natural expectation. */
  reason: string
  /** The natural expectation, when `--expect` replaced it (`expected` is then `--expect`'s). */
  natural?: Expectation
}

/** What the plan is built from. */
export interface PlanInput {
  mode: Mode
  secret: string
  /** Event type of a generated event. */
  type: string
  /** A custom body (exact bytes) instead of a generated event. */
  body?: Uint8Array
  emailId?: string
  /** The `created_at` of a generated event (an ISO date-time); with outOfOrder, the first event's. */
  createdAt?: string
  /** Overrides every natural expectation. */
  expect?: Expectation
  now?: number
}

/** The same event with its email id changed: what an attacker rewriting a delivery would send. */
function tamper(body: string | Uint8Array): string | Uint8Array {
  const { value } = describeBody(body)
  const data = value?.data
  if (value && typeof data === 'object' && data !== null && !Array.isArray(data)) {
    return JSON.stringify({ ...value, data: { ...data, id: crypto.randomUUID() } })
  }
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
  const out = new Uint8Array(bytes.length + 1)
  out.set(bytes)
  out[bytes.length] = 0x20
  return out
}

function scramble<T>(items: readonly T[]): T[] {
  const out = [...items]
  do {
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1))
      ;[out[i], out[j]] = [out[j] as T, out[i] as T]
    }
  } while (out.every((item, index) => item === items[index]))
  return out
}

type Make = (
  expected: Expectation,
  reason: string,
  label?: string,
) => { expected: Expectation; reason: string; label: string; natural?: Expectation }

/** One email's lifecycle, created_at one second apart in order (from `createdAt` when given), signed and sent scrambled. */
function planLifecycle(
  secret: string,
  now: number,
  fresh: (type: string, createdAt?: string) => WebhookEvent,
  make: Make,
  createdAt: string | undefined,
): Promise<PlannedRequest[]> {
  const given = createdAt === undefined ? undefined : parseCreatedAt(createdAt)
  const start = given?.ok ? given.ms : Date.now() - LIFECYCLE.length * 1000
  const events = LIFECYCLE.map((type, step) => ({
    step,
    event: fresh(type, new Date(start + step * 1000).toISOString()),
  }))
  return Promise.all(
    scramble(events).map(async ({ step, event }) => ({
      ...make('2xx', `events of one email may arrive in any order (this is step ${step + 1} of ${LIFECYCLE.length})`, 'out-of-order'),
      delivery: await signWebhook({ secret, body: JSON.stringify(event), id: event.id, timestamp: now }),
      webhookId: event.id,
      type: event.type,
    })),
  )
}

/**
 * Builds the requests of one `send` run, signed and ready.
 * @param input Mode, secret, event type or custom body, optional expectation override.
 * @throws {TypeError} only for an invalid secret (resolveSecret checks it before).
 * @example
 * const requests = await planSend({ mode: 'tampered', secret, type: 'email.bounced' })
 */
export async function planSend(input: PlanInput): Promise<PlannedRequest[]> {
  const now = input.now ?? Math.floor(Date.now() / 1000)
  const emailId = input.emailId ?? crypto.randomUUID()
  const fresh = (type: string, createdAt = input.createdAt): WebhookEvent => generateEvent(type, emailId, createdAt)
  const make: Make = (expected, reason, label = input.mode) => ({
    expected: input.expect ?? expected,
    reason,
    label,
    ...(input.expect === undefined || input.expect === expected ? {} : { natural: expected }),
  })

  if (input.mode === 'outOfOrder') return planLifecycle(input.secret, now, fresh, make, input.createdAt)

  const custom = input.body === undefined ? undefined : describeBody(input.body)
  const event = input.body === undefined ? fresh(input.mode === 'unknownType' ? UNKNOWN_EVENT_TYPE : input.type) : undefined
  const body: string | Uint8Array = event ? JSON.stringify(event) : (input.body as Uint8Array)
  const webhookId = event?.id ?? custom?.id ?? crypto.randomUUID()
  const type = event?.type ?? custom?.type
  const one = async (timestamp: number, key = input.secret, sent = body) => ({
    ...(await signWebhook({ secret: key, body, id: webhookId, timestamp })),
    body: sent,
  })
  const base = { webhookId, type }

  switch (input.mode) {
    case 'duplicate':
      return [
        { ...base, ...make('2xx', 'an authentic delivery is acknowledged', 'first'), delivery: await one(now) },
        {
          ...base,
          ...make('2xx', 'the same webhook-id again is acknowledged without handling it twice', 'duplicate'),
          delivery: await one(now),
        },
      ]
    case 'oldTimestamp':
      return [
        {
          ...base,
          ...make('401', `a timestamp ${SKEW_SECONDS} s old is refused (replay window)`, 'old-timestamp'),
          delivery: await one(now - SKEW_SECONDS),
        },
      ]
    case 'future':
      return [{ ...base, ...make('401', `a timestamp ${SKEW_SECONDS} s ahead is refused`), delivery: await one(now + SKEW_SECONDS) }]
    case 'tampered':
      return [{ ...base, ...make('401', 'a body changed after signing is refused'), delivery: await one(now, input.secret, tamper(body)) }]
    case 'wrongSecret':
      return [
        {
          ...base,
          ...make('401', 'a signature made with another secret is refused', 'wrong-secret'),
          delivery: await one(now, `wrong_${crypto.randomUUID()}`),
        },
      ]
    case 'unknownType':
      return [
        {
          ...base,
          ...make('2xx', 'an event type the receiver does not know is acknowledged, not rejected', 'unknown-type'),
          delivery: await one(now),
        },
      ]
    default:
      return [{ ...base, ...make('2xx', 'an authentic delivery is acknowledged', 'send'), delivery: await one(now) }]
  }
}
