/**
 * The dedup-store conformance suite: the rules of DESIGN.md's `DedupStore` as tests that any
 * store can run under vitest, jest or node:test (pass the runner's `describe` and `it`).
 * It uses real time with short leases, because every store computes expiry on its own clock.
 * The tests of an optional method (`lookup`, `extend`, `completedBy`) are skipped (vitest, node:test) or
 * pass empty (jest) for a store without it.
 */
import type { DedupStore } from '@email-webhooks/core'
import {
  type CompletedByTest,
  check,
  claimCases,
  completedByCases,
  durationCase,
  type ExtendTest,
  expiryCases,
  extendCases,
  type LookupTest,
  lookupCases,
} from './conformance-cases.js'

/**
 * The test functions of your runner: vitest, jest and node:test all fit. `it` passes its test
 * context to `fn`; a context with `skip()` (vitest, node:test) marks tests that do not apply as skipped.
 */
export interface ConformanceRunner {
  describe(name: string, fn: () => void): unknown
  it(name: string, fn: (...args: unknown[]) => Promise<void>): unknown
}

/** Options of {@link dedupStoreConformance}. */
export interface DedupStoreConformanceOptions {
  /** Returns a ready store; called once per test. Keys are random, so a shared store also works. */
  createStore(): DedupStore | Promise<DedupStore>
  /** Closes the store after each test (default true). Set false when `createStore` returns a shared instance. */
  closeAfterEach?: boolean
  /** Short lease and retention used by the expiry tests; default 300 ms. Raise it for a slow remote store. */
  shortMs?: number
  /** Concurrent claims of one key in the race test; default 200. */
  concurrency?: number
  /**
   * Also check that the store refuses `leaseMs`/`retentionMs` that are not whole milliseconds ≥ 1
   * with a `DedupStoreError` of code `'invalid_options'`, taking nothing. The built-in stores do;
   * the receiver checks its own options when it is created, so a custom store need not. Default false.
   */
  checkDurations?: boolean
}

/** Marks the running test skipped through its context (vitest, node:test); under jest it just passes. */
function skipTest(context: unknown, reason: string): void {
  const skip = (context as { skip?: unknown } | null | undefined)?.skip
  if (typeof skip === 'function') skip.call(context, reason)
}

/**
 * Registers the conformance tests for a store.
 * @example
 * import { describe, it } from 'vitest'
 * dedupStoreConformance('my store', { describe, it }, { createStore: () => new MyStore(db) })
 */
export function dedupStoreConformance(name: string, runner: ConformanceRunner, options: DedupStoreConformanceOptions): void {
  const shortMs = options.shortMs ?? 300
  const concurrency = options.concurrency ?? 200
  const closeAfterEach = options.closeAfterEach ?? true
  const newKey = () => `conformance:${crypto.randomUUID()}`

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

  /** A test of the optional method `method`: skipped, as not applicable, on a store without it. */
  function optionalTest<M extends 'lookup' | 'extend' | 'completedBy'>(
    method: M,
    title: string,
    body: (store: DedupStore, call: NonNullable<DedupStore[M]>) => Promise<void>,
  ): void {
    // A rest parameter keeps fn.length at 0: jest reads a declared parameter as a done callback.
    runner.it(`${method}: ${title}`, async (...args: unknown[]) => {
      const context = args[0]
      const store = await options.createStore()
      try {
        const call = store[method]?.bind(store) as NonNullable<DedupStore[M]> | undefined
        if (!call) return skipTest(context, `not applicable: the store has no ${method}()`)
        await body(store, call)
      } finally {
        if (closeAfterEach) await store.close?.()
      }
    })
  }

  const lookupTest: LookupTest = (title, body) =>
    optionalTest('lookup', title, (store, lookup) =>
      body(store, async (key) => {
        const state = await lookup(key)
        check(
          state === 'done' || state === 'in_flight' || state === 'absent',
          `lookup answers 'done', 'in_flight' or 'absent', got ${JSON.stringify(state)}`,
        )
        return state
      }),
    )
  const extendTest: ExtendTest = (title, body) =>
    optionalTest('extend', title, (store, extend) =>
      body(store, async (claim, leaseMs) => {
        const renewed = await extend(claim, { leaseMs })
        check(typeof renewed === 'boolean', `extend answers true or false, got ${JSON.stringify(renewed)}`)
        return renewed
      }),
    )
  const completedByTest: CompletedByTest = (title, body) =>
    optionalTest('completedBy', title, (store, completedBy) =>
      body(store, async (claim) => {
        const recorded = await completedBy(claim)
        check(typeof recorded === 'boolean', `completedBy answers true or false, got ${JSON.stringify(recorded)}`)
        return recorded
      }),
    )

  runner.describe(`DedupStore conformance: ${name}`, () => {
    claimCases(test, { shortMs, newKey })
    expiryCases(test, { concurrency, shortMs, newKey })
    if (options.checkDurations) durationCase(test, newKey)
    lookupCases(lookupTest, { shortMs, newKey })
    extendCases(extendTest, { shortMs, newKey })
    completedByCases(completedByTest, { shortMs, newKey })
  })
}
