/**
 * The ordering conformance suite: the rules of the store's ordering capability (see
 * `OrderingDedupStore`) as tests for vitest, jest or node:test. One event of an email at a time
 * (ordering-lock.ts), races of completes, equal timestamps, a crash between claim and complete,
 * late older events, and a store without the capability (ordering then `unknown`).
 */
import { type DedupStore, type OrderingDedupStore, orderFromClaim, orderInputOf, supportsOrdering } from '@email-webhooks/core'
import type { ConformanceRunner } from './conformance.js'
import { check, type Email, emailOf, LONG } from './ordering-email.js'
import { orderFactCases } from './ordering-facts.js'
import { orderLockCases } from './ordering-lock.js'
import { orderKeepCases, orderMarkCases, orderRaceCases } from './ordering-marks.js'

/** Options of {@link orderingConformance}. */
export interface OrderingConformanceOptions {
  /** Returns a ready store; called once per test. Keys are random, so a shared store also works. */
  createStore(): DedupStore | Promise<DedupStore>
  /** Closes the store after each test (default true). */
  closeAfterEach?: boolean
  /**
   * `true` (default): the store must have the ordering capability and pass every case.
   * `false`: the store has none; only check that it still deduplicates and ordering is `unknown`.
   */
  expectCapability?: boolean
  /** Short lease and retention of the expiry cases; default 300 ms. */
  shortMs?: number
  /** Rounds of the race cases; default 20. */
  rounds?: number
  /**
   * How long a case waits for its email to be freed (its ordered claim answered `in_flight`
   * while another event holds the email) before the case fails; default 10 s.
   */
  freeWaitMs?: number
  /**
   * `true` (default): the store keeps facts (`order.fact` counts, for reconcile) and must pass their
   * cases. `false`: it keeps none; its ordered claims must then carry no `order.fact`.
   */
  facts?: boolean
}

/**
 * Registers the ordering conformance tests for a store.
 * @example
 * import { describe, it } from 'vitest'
 * orderingConformance('my store', { describe, it }, { createStore: () => new MyStore(db) })
 */
export function orderingConformance(name: string, runner: ConformanceRunner, options: OrderingConformanceOptions): void {
  const shortMs = options.shortMs ?? 300
  const rounds = options.rounds ?? 20
  const closeAfterEach = options.closeAfterEach ?? true
  const freeWaitMs = options.freeWaitMs ?? 10_000

  function test(title: string, body: (store: DedupStore) => Promise<void>): void {
    runner.it(title, async () => {
      const store = await options.createStore()
      try {
        await body(store)
      } finally {
        if (closeAfterEach) await store.close?.()
      }
    })
  }
  function ordered(title: string, body: (newEmail: () => Email, store: OrderingDedupStore) => Promise<void>): void {
    test(title, async (store) => {
      check(
        supportsOrdering(store),
        'the store declares the ordering capability (ordering: true); pass expectCapability: false if it has none',
      )
      await body(() => emailOf(store, freeWaitMs), store)
    })
  }

  runner.describe(`Ordering conformance: ${name}`, () => {
    if (options.expectCapability === false) {
      test('without the capability, still deduplicates with order options and ordering is unknown', async (store) => {
        check(!supportsOrdering(store), 'the store does not declare ordering: true')
        const id = crypto.randomUUID()
        const event = { id, type: 'email.submitted', created_at: '2026-01-01T12:00:00.000Z', data: { id: crypto.randomUUID() } }
        const input = orderInputOf(event)
        check(input.ok, 'the event has a position')
        const opts = { ...LONG, order: { key: `conformance:${input.key}`, mark: input.mark } }
        const first = await store.claim(`conformance:${id}`, opts)
        check(first.status === 'acquired', `the claim is acquired, got ${first.status}`)
        const order = orderFromClaim(input, (first as { order?: unknown }).order)
        check(order.status === 'unknown' && order.reason === 'store_without_ordering', `ordering is unknown, got ${JSON.stringify(order)}`)
        check((await store.complete(first.claim, opts)) === true, 'complete with order options returns true')
        check((await store.claim(`conformance:${id}`, opts)).status === 'duplicate', 'the event is then a duplicate')
      })
      return
    }

    orderMarkCases(ordered)
    orderRaceCases(ordered, shortMs, rounds)
    orderKeepCases(ordered, shortMs)
    orderLockCases(ordered, shortMs)
    if (options.facts === false) {
      ordered('keeps no facts, as declared (facts: false): ordered claims carry no order.fact', async (newEmail) => {
        const email = newEmail()
        const result = await email.ask(email.step('email.bounced', 0))
        check(result.status === 'acquired' && result.order?.fact === undefined, `no order.fact, got ${JSON.stringify(result)}`)
      })
    } else orderFactCases(ordered, shortMs)
  })
}
