/**
 * Default dedup store where SQLite cannot load (Bun, Deno, Workers, browsers): the memory
 * store, said once, when the first receiver is built: dedup is not durable, and how to fix it.
 */
import type { DedupStore } from './types.js'

let shared: DedupStore | undefined

/** The durable store of the runtime this runs on, named in the warning (workerd and Deno say who they are in `navigator.userAgent`). */
function durableStoreHint(): string {
  const agent = (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent
  if (agent === 'Cloudflare-Workers') {
    return ' On Cloudflare Workers, use DurableObjectDedupStore from @email-webhooks/cloudflare (or its D1DedupStore); never KV, which is eventually consistent.'
  }
  if (typeof agent === 'string' && agent.startsWith('Deno/')) return ' On Deno, use DenoKvDedupStore from @email-webhooks/core/deno-kv.'
  return ''
}

/**
 * Returns the process-wide memory store; warns once.
 * @param _errorClass Unused here (the Node variant throws the caller's `DedupStoreError`).
 * @param createMemoryStore Builds the caller's `MemoryDedupStore`: this module is a separate
 * bundle (chosen by the `#default-store` import condition), and a copy of the class (and of
 * `DedupStoreError`, which it throws) bundled here would fail `instanceof` in the user's code
 * and in the receiver, which skips store deadlines only for its own `MemoryDedupStore`.
 * @param _logger Unused here: the warning goes to the console even with `logger: false`, since dedup is not durable.
 */
export function getDefaultStore(_errorClass: unknown, createMemoryStore: () => DedupStore, _logger?: unknown): DedupStore {
  if (!shared) {
    console.warn(
      `[@email-webhooks/core] No dedup store was given and SQLite is not available on this runtime, so deduplication uses memory and is NOT durable: after a restart, retried events run their handlers again, and separate instances do not share it. Pass a durable store (options.store: a DedupStore over your database or Redis), or store: 'memory' to say that this is intended (and silence this warning).${durableStoreHint()}`,
    )
    shared = createMemoryStore()
  }
  return shared
}
