/**
 * `DedupStoreError`: the typed failure of a built-in dedup store (memory, SQLite, PostgreSQL,
 * Redis, DynamoDB, and the Cloudflare and Deno KV stores). The receiver turns any store failure into a 503 `store_unavailable` and keeps this
 * error as its `cause`. Messages say what to do and never contain a password.
 */

/** Why a dedup store could not do its work. */
export type DedupStoreErrorCode =
  /**
   * The client library (`pg`, `ioredis`, `@aws-sdk/client-dynamodb`, or `better-sqlite3` for SQLite)
   * is not installed or did not build: `npm install` it (better-sqlite3: 12 on Node 20, 13 on Node 22
   * and 24).
   */
  | 'driver_missing'
  /**
   * The server could not be reached, refused the connection, or dropped it: check host, port,
   * network and connection limits. Deliveries are retried meanwhile.
   */
  | 'connection_failed'
  /**
   * The server did not answer a call within the store's own deadline (`queryTimeoutMs`,
   * `commandTimeoutMs`, DynamoDB's `callTimeoutMs`): a stalled connection after a failover, a proxy
   * that stopped answering, an overloaded server. The call was abandoned and its connection
   * destroyed, never handed to another call; deliveries are retried. Also a SQLite store's
   * `close()` whose disk kept it waiting past `closeTimeoutMs` (a sync that does not end): the
   * store is closed, its file left as a crash would leave it.
   */
  | 'timeout'
  /** The server refused the credentials: fix the user name and password (and `pg_hba.conf` or the Redis ACL). */
  | 'auth_failed'
  /**
   * The server is reachable but not set up for the store: a missing database or table, missing
   * privileges, a read-only replica, a Redis that can lose writes, `waitFor.aof` on a Redis without
   * `WAITAOF`, a SQLite file that cannot be opened. The message names the setting (or the path and
   * the OS error).
   */
  | 'misconfigured'
  /** A command failed on the server for another reason; its message is in the text and in `cause`. */
  | 'command_failed'
  /** The store was closed; create a new one. */
  | 'closed'
  /**
   * An option of the store, or the `leaseMs`/`retentionMs` of a call, is out of range: durations
   * must be whole milliseconds ≥ 1 (`1500`, not `1500.5`). Round it or fix its unit; nothing was written.
   */
  | 'invalid_options'
  /**
   * The store holds as many keys as it may (`MemoryDedupStore`'s `maxKeys`) and all of them are
   * live claims, so a new key cannot be taken: raise `maxKeys`, shorten `leaseMs`, or use a durable store.
   */
  | 'full'
  /**
   * `complete()` (or an inbox entry) was written, but fewer replicas (or local AOF fsyncs) than the
   * store's `waitFor` option asks for confirmed it in time (Redis `WAIT`/`WAITAOF`). The event is not
   * acknowledged (503); the sender's retry finds it done if the write survived, or handles it again
   * if not. Check `INFO replication`, or raise `waitFor.timeoutMs`.
   */
  | 'durability_timeout'
  /**
   * The database refused the call for now: the table's capacity or the account's request rate is
   * exceeded (DynamoDB `ProvisionedThroughputExceededException`, `ThrottlingException`). Nothing was
   * written; the receiver answers 503 with `Retry-After` and the sender retries. Use on-demand
   * capacity, or raise it, if it lasts.
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
