/**
 * The ordering conformance suite's view of one email: its events as the receiver hands them to a
 * store (dedup key, mark key, mark), and claims, completes and mark reads through the store.
 */
import {
  type Claim,
  type ClaimResult,
  type EventOrder,
  type FactCounts,
  type OrderingDedupStore,
  type OrderMark,
  orderFromClaim,
  orderInputOf,
} from '@email-webhooks/core'

/** Lease and retention of the cases that need no expiry. */
export const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const BASE_MS = Date.UTC(2026, 0, 1, 12)

/** A failed rule; the message says which and what was seen. */
export class OrderingConformanceFailure extends Error {
  override readonly name = 'OrderingConformanceFailure'
}

/** Throws an {@link OrderingConformanceFailure} with `message` unless `condition`. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new OrderingConformanceFailure(message)
}

export const sleep = (ms: number): Promise<void> => new Promise<void>((resolve) => setTimeout(resolve, ms))
export const show = (mark: OrderMark | null | undefined): string =>
  mark ? `${mark.type}@${mark.createdAtMs}/${mark.eventId}` : String(mark)
export const sameMark = (a: OrderMark | null | undefined, b: OrderMark | null): boolean =>
  a === b || (!!a && !!b && a.createdAtMs === b.createdAtMs && a.eventId === b.eventId && a.type === b.type)

/** One email's event as the receiver will hand it to the store: dedup key, mark key and mark. */
export interface Step {
  dedupKey: string
  markKey: string
  mark: OrderMark
  /** The event's fact within the mark key, `<type>|<created_at ms>`. */
  fact: string
}

/** Test helpers bound to one store and one email. */
export interface Email {
  step(type: string, offsetMs: number, id?: string): Step
  /** The store's answer to a claim of `s` with its order option. */
  ask(s: Step, leaseMs?: number): Promise<ClaimResult>
  /** Claims `s` and checks that it is acquired with an order. */
  claim(s: Step, leaseMs?: number): Promise<{ claim: Claim; order: EventOrder }>
  complete(c: Claim, s: Step, retentionMs?: number, factChange?: FactCounts): Promise<boolean>
  /** Claims (waiting while another event of the email holds it, as the receiver does) and completes `s`. */
  handle(s: Step): Promise<EventOrder>
  markNow(): Promise<OrderMark | null>
  expectMark(expected: OrderMark | null, what: string): Promise<void>
}

/**
 * The helpers of a new email (a random id) on `store`; `handle` waits up to `freeWaitMs` for the
 * email to be free before it fails the case.
 */
export function emailOf(store: OrderingDedupStore, freeWaitMs = 10_000): Email {
  const emailId = crypto.randomUUID()
  const markKey = `conformance:email:${emailId}`
  const step = (type: string, offsetMs: number, id: string = crypto.randomUUID()): Step => {
    const input = orderInputOf({ id, type, created_at: new Date(BASE_MS + offsetMs).toISOString(), data: { id: emailId } })
    check(input.ok, `orderInputOf gives a position for a well-formed email event (${input.ok || input.reason})`)
    return { dedupKey: `conformance:${emailId}:${id}`, markKey, mark: input.mark, fact: `${type}|${input.mark.createdAtMs}` }
  }
  const ask = (s: Step, leaseMs = LONG.leaseMs) =>
    store.claim(s.dedupKey, { leaseMs, retentionMs: LONG.retentionMs, order: { key: s.markKey, mark: s.mark, fact: s.fact } })
  const accept = (s: Step, result: ClaimResult): { claim: Claim; order: EventOrder } => {
    check(result.status === 'acquired', `claim of ${s.mark.type} is acquired, got ${JSON.stringify(result)}`)
    const order = orderFromClaim({ ok: true, key: s.markKey, mark: s.mark }, result.order)
    check(order.status !== 'unknown', `an acquired claim with an order option carries order.mark, got ${JSON.stringify(result.order)}`)
    check(
      result.claim.orderKey === s.markKey,
      `an acquired ordered claim holds its order key (claim.orderKey), got ${result.claim.orderKey}`,
    )
    return { claim: result.claim, order }
  }
  const claim = async (s: Step, leaseMs = LONG.leaseMs) => accept(s, await ask(s, leaseMs))
  const complete = (c: Claim, s: Step, retentionMs = LONG.retentionMs, factChange?: FactCounts) =>
    store.complete(c, { retentionMs, order: { key: s.markKey, mark: s.mark, fact: s.fact }, ...(factChange ? { factChange } : {}) })
  const handle = async (s: Step): Promise<EventOrder> => {
    const until = Date.now() + freeWaitMs
    let result = await ask(s)
    while (result.status === 'in_flight' && result.reason === 'order' && Date.now() < until) {
      await sleep(2 + Math.random() * 5)
      result = await ask(s)
    }
    const { claim: c, order } = accept(s, result)
    check((await complete(c, s)) === true, `complete of ${s.mark.type} with its own token returns true`)
    return order
  }
  /** Reads the mark through a probe claim (claims never change marks), then releases the probe. */
  const markNow = async (): Promise<OrderMark | null> => {
    const probe = step('email.probe', 0)
    const { claim: c, order } = await claim(probe)
    await store.release(c)
    return order.newestHandled
  }
  const expectMark = async (expected: OrderMark | null, what: string) => {
    const mark = await markNow()
    check(sameMark(mark, expected), `${what}: the mark is ${show(expected)}, got ${show(mark)}`)
  }
  return { step, ask, claim, complete, handle, markNow, expectMark }
}
