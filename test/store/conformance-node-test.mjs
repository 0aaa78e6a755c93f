// Runs the dedup-store conformance suite under node:test (not vitest), the way a user of
// another runner would. Started by conformance.test.ts with `node --test`.
// With CONFORMANCE_BROKEN_STORE=1 it checks a store that forgets completions, which must fail.
import { describe, it } from 'node:test'
import { MemoryDedupStore } from '@email-webhooks/core'
import { dedupStoreConformance } from '@email-webhooks/core/testing'

/** Claims like the memory store, but `complete` records nothing: duplicates are never detected. */
class ForgetfulStore extends MemoryDedupStore {
  complete() {
    return Promise.resolve(true)
  }
}

const broken = process.env.CONFORMANCE_BROKEN_STORE === '1'
dedupStoreConformance(
  broken ? 'ForgetfulStore under node:test' : 'MemoryDedupStore under node:test',
  { describe, it },
  { createStore: () => (broken ? new ForgetfulStore() : new MemoryDedupStore()) },
)
