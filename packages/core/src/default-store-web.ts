/**
 * Default dedup store where SQLite cannot load (Bun, Deno, Workers, browsers): the memory
 * store, with one warning that dedup is not durable and how to fix it.
 */
import type { DedupStore } from './store/types.js'

let shared: Promise<DedupStore> | undefined

/** The process-wide fallback store; warns once. */
export function memoryFallback(reason: string, createMemoryStore: () => DedupStore): Promise<DedupStore> {
  if (!shared) {
    console.warn(
      `[@email-webhooks/core] ${reason} Deduplication uses memory and is NOT durable: after a restart, retried events run their handlers again, and separate instances do not share it. Pass a durable store (options.store), e.g. SqliteDedupStore on Node or a custom DedupStore over your database.`,
    )
    shared = Promise.resolve(createMemoryStore())
  }
  return shared
}

/** Resolves the default store for this runtime. */
export function getDefaultStore(createMemoryStore: () => DedupStore): Promise<DedupStore> {
  return memoryFallback('No dedup store was given and SQLite is not available on this runtime.', createMemoryStore)
}
