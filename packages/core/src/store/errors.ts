/**
 * `DedupStoreError`: the typed failure of a built-in dedup store (memory, SQLite, PostgreSQL,
 * Redis, DynamoDB, and the Cloudflare and Deno KV stores). The receiver turns any store failure into a 503 `store_unavailable` and keeps this
 * error as its `cause`. Messages say what to do and never contain a password.
 */

/** Why a dedup store could not do its work. */
export type DedupStoreErrorCode =
  /** The client library (`pg`, `ioredis`, `@aws-sdk/client-dynamodb`) is not installed. */
  | 'driver_missing'
  /** The server could not be reached, refused the connection, or dropped it. */
  | 'connection_failed'
  /**
   * The server did not answer a call within the store's own deadline (a stalled connection after a
   * failover, a proxy that stopped answering, an overloaded server): the call was abandoned and
   * its connection destroyed, never handed to another call.
   */
  | 'timeout'
  /** The server refused the credentials. */
  | 'auth_failed'
  /** The server is reachable but not set up for the store: database, table, permission or durability settings. */
  | 'misconfigured'
  /** A command failed on the server for another reason. */
  | 'command_failed'
  /** The store was closed. */
  | 'closed'
  /**
   * An option of the store, or the `leaseMs`/`retentionMs` of a call, is out of range: durations
   * must be whole milliseconds ≥ 1 (`1500`, not `1500.5`). Fix the value; nothing was written.
   */
  | 'invalid_options'
  /**
   * The store holds as many keys as it may (`MemoryDedupStore`'s `maxKeys`) and all of them are
   * live claims, so a new key cannot be taken: raise `maxKeys` or use a durable store.
   */
  | 'full'
  /**
   * `complete()` was written, but fewer replicas (or local AOF fsyncs) than the store's `waitFor`
   * option asks for confirmed it in time (Redis `WAIT`/`WAITAOF`). The event is not acknowledged
   * (503); the sender's retry finds it done if the write survived, or handles it again if not.
   */
  | 'durability_timeout'
  /**
   * The database refused the call for now: the table's capacity or the account's request rate is
   * exceeded (DynamoDB `ProvisionedThroughputExceededException`, `ThrottlingException`). Nothing was
   * written; the receiver answers 503 with Retry-After and the sender retries. Raise the capacity
   * (or use on-demand capacity) if it lasts.
   */
  | 'throttled'

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
