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
 * The cases of one suite run side by side (vitest's describe.concurrent, five at a time): each
 * uses keys and emails of its own, and most of their time is spent waiting for a lease or a
 * retention to end. The timed margins stretch with TEST_TIME_SCALE.
 */
const sideBySide = { describe: describe.concurrent, it }

/**
 * Registers the dedup-store conformance suite with vitest's describe/it, on a new store per test (a
 * built-in store: durations checked too). `shortMs` (the lease and retention of the expiry cases)
 * is longer for a store whose calls take tens of milliseconds (an emulator behind a proxy).
 */
export function conformance(name: string, createStore: () => DedupStore, shortMs = 300): void {
  dedupStoreConformance(name, sideBySide, { createStore, checkDurations: true, shortMs: scaled(shortMs) })
}

/** Registers the ordering conformance suite with vitest's describe/it, on a new store per test. */
export function ordering(name: string, createStore: () => DedupStore): void {
  orderingConformance(name, sideBySide, { createStore, shortMs: scaled(300) })
}

/**
 * Two stores on one database (two connections to one file, two pools or clients on one server),
 * used in turn: a claim made through one is seen and fenced by the other. It has `lookup` when
 * both stores have it, and the ordering capability when both have it.
 */
export class AlternatingStore implements DedupStore {
  #turn = 0
  readonly lookup?: (key: string) => Promise<DedupKeyState>
  readonly extend?: (claim: Claim, opts: ExtendOptions) => Promise<boolean>
  readonly ordering?: boolean
  constructor(readonly stores: readonly [DedupStore, DedupStore]) {
    if (stores.every((store) => store.ordering === true)) this.ordering = true
    if (stores.every((store) => typeof store.extend === 'function')) {
      this.extend = (claim, opts) => (this.#next().extend as NonNullable<DedupStore['extend']>)(claim, opts)
    }
    if (stores.every((store) => typeof store.lookup === 'function')) {
      this.lookup = (key) => (this.#next().lookup as (key: string) => Promise<DedupKeyState>)(key)
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
