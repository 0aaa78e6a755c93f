/**
 * Default dedup store on Node: a SQLite file at `EMAIL_WEBHOOKS_DB`, else
 * `./.email-webhooks/dedup.db` (folder created), opened synchronously when a receiver is built.
 * One store per path is shared by every receiver in the process. If the file cannot be opened,
 * or better-sqlite3 cannot load, that is a `DedupStoreError` thrown at construction, naming the
 * path, the OS error and the fix: never a silent fall back to a memory store.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import type { DedupStoreError } from './errors.js'
import type { DedupStore } from './types.js'

/**
 * The receiver passes its own `DedupStoreError`: this module is a separate bundle (chosen by the
 * `#default-store` import condition), and a copy of the class bundled here would fail the user's
 * `error instanceof DedupStoreError`.
 */
type ErrorClass = typeof DedupStoreError

/** Where the default SQLite file lives when `EMAIL_WEBHOOKS_DB` is not set. */
const DEFAULT_DB_PATH = './.email-webhooks/dedup.db'

const stores = new Map<string, DedupStore>()

/** The error's message with its OS/SQLite code, and its cause's (the driver's) when it has one. */
function causeText(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  const text = typeof code === 'string' && !error.message.includes(code) ? `${code}: ${error.message}` : error.message
  return error.cause instanceof Error ? `${text} (${error.cause.message.split('\n')[0]})` : text
}

function openError(DedupStoreError: ErrorClass, path: string, error: unknown): InstanceType<ErrorClass> {
  const why = causeText(error)
  if ((error as { code?: unknown } | null)?.code === 'driver_missing') {
    return new DedupStoreError(
      'driver_missing',
      `[@email-webhooks/core] No store was given, and the default durable store (SQLite at ${path}) needs better-sqlite3, which could not be loaded. Install it: \`npm install better-sqlite3\` (then \`npm rebuild better-sqlite3\` if its native build failed). Or pass a store (options.store), or store: 'memory' to accept non-durable dedup. Cause: ${why}`,
      { cause: error },
    )
  }
  return new DedupStoreError(
    'misconfigured',
    `[@email-webhooks/core] No store was given, and the default durable store could not open its SQLite file at ${path}: ${why}. Fix: make that folder writable by this process (and the file, if it exists, a valid SQLite database), or set EMAIL_WEBHOOKS_DB to a writable path, or pass a store (options.store), or store: 'memory' to accept non-durable dedup.`,
    { cause: error },
  )
}

/**
 * Opens (or reuses) the default store for this runtime.
 * @param errorClass The `DedupStoreError` class of the calling bundle.
 * @param _createMemoryStore Unused on Node (the web variant's fallback; Node never falls back).
 * @throws {DedupStoreError} `misconfigured` when the file cannot be opened, `driver_missing` when better-sqlite3 cannot load.
 */
export function getDefaultStore(errorClass: ErrorClass, _createMemoryStore?: () => DedupStore): DedupStore {
  const path = resolve(process.env.EMAIL_WEBHOOKS_DB || DEFAULT_DB_PATH)
  let store = stores.get(path)
  if (!store) {
    try {
      mkdirSync(dirname(path), { recursive: true })
      store = new SqliteDedupStore({ path })
    } catch (error) {
      throw openError(errorClass, path, error)
    }
    stores.set(path, store)
  }
  return store
}
