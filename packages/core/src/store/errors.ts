/**
 * `DedupStoreError`: the typed failure of a built-in server-backed dedup store (PostgreSQL,
 * Redis). The receiver turns any store failure into a 503 `store_unavailable` and keeps this
 * error as its `cause`. Messages say what to do and never contain a password.
 */

/** Why a dedup store could not do its work. */
export type DedupStoreErrorCode =
  /** The client library (`pg`, `ioredis`) is not installed. */
  | 'driver_missing'
  /** The server could not be reached, refused the connection, or dropped it. */
  | 'connection_failed'
  /** The server refused the credentials. */
  | 'auth_failed'
  /** The server is reachable but not set up for the store: database, table, permission or durability settings. */
  | 'misconfigured'
  /** A command failed on the server for another reason. */
  | 'command_failed'
  /** The store was closed. */
  | 'closed'
  /** A call passed options the store cannot use (e.g. `leaseMs` that is not a whole number of milliseconds). */
  | 'invalid_options'

/**
 * A dedup store failed. `code` is stable; `cause` is the driver's error.
 * @example
 * try { await store.claim(key, opts) } catch (error) { if (error instanceof DedupStoreError) console.error(error.code) }
 */
export class DedupStoreError extends Error {
  override readonly name = 'DedupStoreError'
  readonly code: DedupStoreErrorCode

  constructor(code: DedupStoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}
