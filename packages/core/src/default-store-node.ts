/**
 * Default dedup store on Node: a SQLite file at `EMAIL_WEBHOOKS_DB`, else
 * `./.email-webhooks/dedup.db` (folder created). One store per path is shared by every
 * receiver in the process. If better-sqlite3 cannot load, the memory store with a warning.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { memoryFallback } from './default-store-web.js'
import type { DedupStore } from './store/types.js'

/** Where the default SQLite file lives when `EMAIL_WEBHOOKS_DB` is not set. */
export const DEFAULT_DB_PATH = './.email-webhooks/dedup.db'

const stores = new Map<string, Promise<DedupStore>>()

/** Resolves the default store for this runtime. */
export function getDefaultStore(createMemoryStore: () => DedupStore): Promise<DedupStore> {
  const path = resolve(process.env.EMAIL_WEBHOOKS_DB || DEFAULT_DB_PATH)
  let store = stores.get(path)
  if (!store) {
    store = (async (): Promise<DedupStore> => {
      try {
        mkdirSync(dirname(path), { recursive: true })
        return new SqliteDedupStore({ path })
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error)
        return memoryFallback(`The default SQLite dedup store could not be opened at ${path} (${why}).`, createMemoryStore)
      }
    })()
    stores.set(path, store)
  }
  return store
}
