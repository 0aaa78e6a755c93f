/**
 * Out-of-order sequences for tests: the signed deliveries of one email's events in lifecycle
 * order (`createEmailSequence`), and deterministic ways to disorder them (seeded shuffle, reverse,
 * delay one, every permutation).
 */
import type { WebhookEvent } from '@email-webhooks/core'
import { createSignedDelivery, type SignedDelivery } from './fixtures.js'

/** One step of a sequence when a bare type is not enough. */
export interface EmailSequenceStep {
  type: string
  /** Put in `data.recipient` (the field `foldEmailEvents` reads by default). */
  recipient?: string
  /** More `data` fields (`id` is always the sequence's email id). */
  data?: Record<string, unknown>
  /** `created_at` as ms after `start`; default the step's index × `stepMs` (equal offsets make equal timestamps). */
  offsetMs?: number
  /** The event id; default a fresh (or, with `seed`, a seeded) UUID. */
  id?: string
}

/** Input of {@link createEmailSequence}. */
export interface CreateEmailSequenceInput {
  /** The email id (`data.id`) of every event; default a fresh (or seeded) UUID. */
  emailId?: string
  /** The events in lifecycle order: types, or steps with a recipient, data, time or id. */
  types: ReadonlyArray<string | EmailSequenceStep>
  /** `created_at` of the first event: ms since the epoch, ISO text or a `Date`; default now. */
  start?: number | string | Date
  /** Time between consecutive events in ms; default 1,000. `0` gives every event the same `created_at`. */
  stepMs?: number
  /** Makes the generated ids reproducible. */
  seed?: number
  /** Secret to sign with; default `TEST_SECRET`. */
  secret?: string
  /** Signing time in seconds (`webhook-timestamp`); default now (or `now()`). */
  timestamp?: number
  /** Clock in ms for the default `start` and `timestamp`. */
  now?: () => number
}

/** One email's events and their signed deliveries, both in lifecycle order. */
export interface EmailSequence {
  emailId: string
  events: WebhookEvent[]
  deliveries: SignedDelivery[]
}

/** A small seeded generator (mulberry32): the same seed gives the same numbers in [0, 1). */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

function seededUuid(next: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(next() * 16).toString(16))
  hex[12] = '4'
  hex[16] = ((Math.floor(next() * 4) & 0x3) | 0x8).toString(16)
  const s = hex.join('')
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`
}

function startMs(start: CreateEmailSequenceInput['start'], now: () => number): number {
  if (start === undefined) return now()
  const ms = start instanceof Date ? start.getTime() : typeof start === 'string' ? Date.parse(start) : start
  if (!Number.isFinite(ms)) throw new TypeError('[@email-webhooks/core] createEmailSequence: start must be a valid time.')
  return ms
}

/**
 * Builds one email's events in lifecycle order, `created_at` `stepMs` apart, each signed as the
 * service would deliver it. Disorder them with {@link shuffled}, {@link reversed}, {@link delayedOne}
 * or {@link permutations} and send them to your receiver.
 *
 * @param input `types` (required), `emailId`, `start`, `stepMs` (default 1,000), `seed`, `secret`, `timestamp`, `now`.
 * @throws {TypeError} when `start` is not a valid time or `stepMs` is negative.
 * @example
 * const { deliveries } = await createEmailSequence({ types: ['email.queued', 'email.submitted', 'email.deferred'] })
 * for (const { headers, body } of reversed(deliveries)) await app.request('/hooks', { method: 'POST', headers, body })
 */
export async function createEmailSequence(input: CreateEmailSequenceInput): Promise<EmailSequence> {
  const now = input.now ?? Date.now
  const stepMs = input.stepMs ?? 1000
  if (!Number.isFinite(stepMs) || stepMs < 0) throw new TypeError('[@email-webhooks/core] createEmailSequence: stepMs must be ≥ 0.')
  const next = input.seed === undefined ? null : random(input.seed)
  const uuid = () => (next ? seededUuid(next) : crypto.randomUUID())
  const emailId = input.emailId ?? uuid()
  const base = startMs(input.start, now)
  const events = input.types.map((entry, index): WebhookEvent => {
    const step: EmailSequenceStep = typeof entry === 'string' ? { type: entry } : entry
    const data: Record<string, unknown> = { ...step.data, id: emailId }
    if (step.recipient !== undefined) data.recipient = step.recipient
    const created = base + (step.offsetMs ?? index * stepMs)
    return { id: step.id ?? uuid(), type: step.type, created_at: new Date(created).toISOString(), data }
  })
  const timestamp = input.timestamp ?? Math.floor(now() / 1000)
  const signing = input.secret === undefined ? { timestamp } : { timestamp, secret: input.secret }
  const deliveries = await Promise.all(events.map((event) => createSignedDelivery({ ...signing, event })))
  return { emailId, events, deliveries }
}

/**
 * A copy in a seeded random order (Fisher–Yates): the same seed always gives the same order.
 *
 * @param items What to shuffle (not changed).
 * @param seed Any number.
 * @example
 * const order = shuffled(sequence.deliveries, 42)
 */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items]
  const next = random(seed)
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

/**
 * A reversed copy: the newest event arrives first.
 *
 * @param items What to reverse (not changed).
 * @example
 * const newestFirst = reversed(sequence.deliveries)
 */
export function reversed<T>(items: readonly T[]): T[] {
  return [...items].reverse()
}

/**
 * A copy with the item at `index` moved to position `to` (default last): one event delayed, as
 * after a retry backoff or a manual re-send.
 *
 * @param items The sequence (not changed).
 * @param index Which item arrives late.
 * @param to Where it lands; default the end.
 * @throws {RangeError} when `index` or `to` is outside the list.
 * @example
 * const lateDeferred = delayedOne(sequence.deliveries, 1) // queued, submitted, …, then the deferred
 */
export function delayedOne<T>(items: readonly T[], index: number, to: number = items.length - 1): T[] {
  const inRange = (n: number) => Number.isInteger(n) && n >= 0 && n < items.length
  if (!inRange(index) || !inRange(to))
    throw new RangeError(`[@email-webhooks/core] delayedOne: index and to must be in 0..${items.length - 1}.`)
  const out = [...items]
  const [item] = out.splice(index, 1)
  out.splice(to, 0, item as T)
  return out
}

/** Most items {@link permutations} accepts (8! = 40,320 orders). */
export const MAX_PERMUTATION_ITEMS = 8

/**
 * Every order of a short sequence (Heap's algorithm), for exhaustive tests.
 *
 * @param items At most {@link MAX_PERMUTATION_ITEMS} items (not changed).
 * @throws {RangeError} for a longer list.
 * @example
 * for (const order of permutations(sequence.events)) expect(foldEmailEvents(order).state).toEqual(expected)
 */
export function permutations<T>(items: readonly T[]): T[][] {
  if (items.length > MAX_PERMUTATION_ITEMS) {
    throw new RangeError(`[@email-webhooks/core] permutations takes at most ${MAX_PERMUTATION_ITEMS} items; use shuffled() with seeds.`)
  }
  const a = [...items]
  const out: T[][] = [[...a]]
  const c = new Array<number>(a.length).fill(0)
  let i = 0
  while (i < a.length) {
    if ((c[i] as number) < i) {
      const j = i % 2 === 0 ? 0 : (c[i] as number)
      ;[a[i], a[j]] = [a[j] as T, a[i] as T]
      out.push([...a])
      c[i] = (c[i] as number) + 1
      i = 0
    } else {
      c[i] = 0
      i++
    }
  }
  return out
}
