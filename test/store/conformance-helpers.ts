/**
 * Shared by conformance.test.ts and server-conformance.test.ts (the suites under vitest, and a store
 * made of two), and by test/ordering/conformance.test.ts and test/adapters/ordering.test.ts (a store
 * without the ordering capability).
 */
import {
  type Claim,
  type ClaimOptions,
  type CompleteOptions,
  type DedupKeyState,
  type DedupStore,
  type ExtendOptions,
  MemoryDedupStore,
} from '@email-webhooks/core'
import { dedupStoreConformance, orderingConformance } from '@email-webhooks/core/testing'
import { describe, it } from 'vitest'
import { scaled } from '../support/time.js'

/**
 * How the cases of one suite run. `side-by-side` (vitest's describe.concurrent: five suites of a
 * file at a time, five cases of each): each case uses keys and emails of its own, and most of its
 * time is spent waiting for a lease or a retention to end. `one-by-one`, for a store that serves
 * one call at a time anyway (an emulator in one process): the cases in turn, the suites of the
 * file side by side.
 */
export type CaseOrder = 'side-by-side' | 'one-by-one'

const RUNNERS = {
  'side-by-side': { describe: describe.concurrent, it },
  'one-by-one': { describe: describe.concurrent, it: it.sequential },
} as const

/**
 * The short lease and retention of the expiry cases: 1 s rather than the suites' 300 ms default,
 * so that a case whose next call comes late on a busy machine (five cases side by side, a type
 * check beside the run) still finds the lease or retention live; waits are side by side, so the
 * longer time costs little. Stretched by TEST_TIME_SCALE.
 */
const SHORT_MS = 1_000

/** Registers the dedup-store conformance suite with vitest's describe/it, on a new store per test (a built-in store: durations checked too). */
export function conformance(
  name: string,
  createStore: () => DedupStore,
  order: CaseOrder = 'side-by-side',
  more: { concurrency?: number } = {},
): void {
  dedupStoreConformance(name, RUNNERS[order], { createStore, checkDurations: true, shortMs: scaled(SHORT_MS), ...more })
}

/** Registers the ordering conformance suite with vitest's describe/it, on a new store per test. */
export function ordering(name: string, createStore: () => DedupStore, order: CaseOrder = 'side-by-side'): void {
  orderingConformance(name, RUNNERS[order], { createStore, shortMs: scaled(SHORT_MS) })
}

/**
 * Two stores on one database (two connections to one file, two pools or clients on one server),
 * used in turn: a claim made through one is seen and fenced by the other. It has `lookup`,
 * `extend` and `completedBy` when both stores have them, and the ordering capability when both have it.
 */
export class AlternatingStore implements DedupStore {
  #turn = 0
  readonly lookup?: (key: string) => Promise<DedupKeyState>
  readonly extend?: (claim: Claim, opts: ExtendOptions) => Promise<boolean>
  readonly completedBy?: (claim: Claim) => Promise<boolean>
  readonly ordering?: boolean
  constructor(readonly stores: readonly [DedupStore, DedupStore]) {
    if (stores.every((store) => store.ordering === true)) this.ordering = true
    if (stores.every((store) => typeof store.extend === 'function')) {
      this.extend = (claim, opts) => (this.#next().extend as NonNullable<DedupStore['extend']>)(claim, opts)
    }
    if (stores.every((store) => typeof store.lookup === 'function')) {
      this.lookup = (key) => (this.#next().lookup as (key: string) => Promise<DedupKeyState>)(key)
    }
    if (stores.every((store) => typeof store.completedBy === 'function')) {
      this.completedBy = (claim) => (this.#next().completedBy as NonNullable<DedupStore['completedBy']>)(claim)
    }
  }
  #next(): DedupStore {
    return this.stores[this.#turn++ % 2] as DedupStore
  }
  claim(key: string, opts: ClaimOptions) {
    return this.#next().claim(key, opts)
  }
  complete(claim: Claim, opts: CompleteOptions) {
    return this.#next().complete(claim, opts)
  }
  release(claim: Claim) {
    return this.#next().release(claim)
  }
  async close() {
    await Promise.all(this.stores.map((store) => store.close?.()))
  }
}

/** A MemoryDedupStore seen without its ordering capability: the `order` options never reach it. */
export class WithoutOrdering implements DedupStore {
  readonly #store = new MemoryDedupStore()
  claim(key: string, opts: ClaimOptions) {
    return this.#store.claim(key, { leaseMs: opts.leaseMs, retentionMs: opts.retentionMs })
  }
  complete(claim: Claim, opts: CompleteOptions) {
    return this.#store.complete(claim, { retentionMs: opts.retentionMs })
  }
  release(claim: Claim) {
    return this.#store.release(claim)
  }
  /** What the inner store holds for `key` (the ordering reference store reads it before taking an order lock). */
  lookup(key: string): Promise<DedupKeyState> {
    return this.#store.lookup(key)
  }
  close() {
    return this.#store.close()
  }
}
