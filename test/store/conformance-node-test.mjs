// Runs the dedup-store conformance suite under node:test (not vitest), the way a user of
// another runner would. Started by conformance.test.ts with `node --test`.
// CONFORMANCE_STORE picks the store: unset for the memory store; 'broken' for a store that
// forgets completions (which must fail); 'no-lookup' for one without the optional lookup() and extend()
// (its lookup and extend tests must be reported as skipped).
import { describe, it } from 'node:test'
import { MemoryDedupStore } from '@email-webhooks/core'
import { dedupStoreConformance } from '@email-webhooks/core/testing'

/** Claims like the memory store, but `complete` records nothing: duplicates are never detected. */
class ForgetfulStore extends MemoryDedupStore {
  complete() {
    return Promise.resolve(true)
  }
}

/** The memory store's claim, complete and release, and no lookup nor extend. */
class NoLookupStore {
  #inner = new MemoryDedupStore()
  claim(key, opts) {
    return this.#inner.claim(key, opts)
  }
  complete(claim, opts) {
    return this.#inner.complete(claim, opts)
  }
  release(claim) {
    return this.#inner.release(claim)
  }
}

const stores = {
  memory: ['MemoryDedupStore under node:test', () => new MemoryDedupStore()],
  broken: ['ForgetfulStore under node:test', () => new ForgetfulStore()],
  'no-lookup': ['NoLookupStore under node:test', () => new NoLookupStore()],
}
const [name, createStore] = stores[process.env.CONFORMANCE_STORE ?? 'memory']
dedupStoreConformance(name, { describe, it }, { createStore })
