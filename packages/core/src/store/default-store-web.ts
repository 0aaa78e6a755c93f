/**
 * Default dedup store where SQLite cannot load (Bun, Deno, Workers, browsers): the memory
 * store, said once, when the first receiver is built: dedup is not durable, and how to fix it.
 */
import { MemoryDedupStore } from './memory.js'
import type { DedupStore } from './types.js'

let shared: DedupStore | undefined

/** Returns the process-wide memory store; warns once. */
export function getDefaultStore(_errorClass?: unknown): DedupStore {
  if (!shared) {
    console.warn(
      "[@email-webhooks/core] No dedup store was given and SQLite is not available on this runtime, so deduplication uses memory and is NOT durable: after a restart, retried events run their handlers again, and separate instances do not share it. Pass a durable store (options.store: a DedupStore over your database or Redis), or store: 'memory' to say that this is intended (and silence this warning).",
    )
    shared = new MemoryDedupStore()
  }
  return shared
}
