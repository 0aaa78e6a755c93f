/**
 * `SqliteDedupStore`: durable dedup in one SQLite file through better-sqlite3 (an optional
 * peer dependency, loaded only by this module). WAL, one prepared atomic upsert per claim,
 * token-fenced complete/release, a bounded WAL and expired rows purged in small batches.
 * Several processes may share one file.
 *
 * Group commit, off the main thread: the claims and completes requested while the event loop
 * runs one turn share one transaction (flushed from `setImmediate`), committed without a
 * blocking fsync. With `durability: 'full'` each batch then starts an `fdatasync` of the WAL
 * file on libuv's thread pool, and its completes resolve when that sync (which started after
 * their commit) ends; a batch does not wait for an earlier batch's sync first. So the event
 * loop never waits for the disk, and a `complete` is durable before it resolves. Claims and
 * releases need no sync of their own: a claim lost to a power cut was never acknowledged (its
 * event's 2xx waits for the complete, whose sync also covers every earlier WAL frame), so the
 * sender retries it, as after a crash mid-handler. Where the WAL file cannot be opened (an
 * unusual path), each batch with completes commits with SQLite's `synchronous = FULL` instead.
 */
import { closeSync, fdatasync, openSync, realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupStore } from './store/types.js'

const PACKAGE = '[@email-webhooks/core/sqlite]'
export const DEFAULT_SQLITE_TABLE = 'email_webhook_dedup'
const DEFAULT_BUSY_TIMEOUT_MS = 5_000
const JOURNAL_SIZE_LIMIT_BYTES = 8 * 1024 * 1024
const PURGE_EVERY_CLAIMS = 1_000
const PURGE_BATCH_ROWS = 500
const TABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Options of {@link SqliteDedupStore}. */
export interface SqliteDedupStoreOptions {
  /** Database file; created with its folder's permission if missing. `':memory:'` is not durable. */
  path: string
  /**
   * `'full'` (default): a `complete` is fsynced before it resolves, so acknowledged events survive
   * power loss (concurrent completes share one fsync). `'normal'`: no fsync; survives a process crash only.
   */
  durability?: 'full' | 'normal'
  /** How long a write waits for another process's lock; default 5,000 ms. */
  busyTimeoutMs?: number
  /** Table name; default `email_webhook_dedup`. */
  table?: string
  /** Clock in milliseconds; default `Date.now`. For tests. */
  now?: () => number
}

interface Statement {
  run(...params: unknown[]): { changes: number }
  all(...params: unknown[]): unknown[]
  get(...params: unknown[]): unknown
}
interface Database {
  pragma(source: string, options?: { simple?: boolean }): unknown
  exec(source: string): unknown
  prepare(source: string): Statement
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R
  close(): unknown
}

interface PendingClaim {
  key: string
  leaseMs: number
  resolve: (result: ClaimResult) => void
  reject: (error: unknown) => void
}

interface PendingComplete {
  key: string
  token: string
  ms: number
  resolve: (done: boolean) => void
  reject: (error: unknown) => void
}
type DatabaseConstructor = new (path: string, options?: { timeout?: number }) => Database

let driver: DatabaseConstructor | undefined

function loadDriver(): DatabaseConstructor {
  if (driver) return driver
  try {
    const require = createRequire(import.meta.url)
    driver = require('better-sqlite3') as DatabaseConstructor
    return driver
  } catch (cause) {
    throw new Error(
      `${PACKAGE} better-sqlite3 could not be loaded, so the SQLite dedup store is unavailable. Install it with \`npm install better-sqlite3\` (version 11 or 12 on Node 20; 13 on Node 24, where 12 crashes). It is a native module: if it is installed but failed to build, make sure python3, make and a C++ compiler are present and run \`npm rebuild better-sqlite3\`; with pnpm, allow its build script (pnpm approve-builds, or allowBuilds in pnpm-workspace.yaml).`,
      { cause },
    )
  }
}

/**
 * Dedup store in a SQLite file.
 * @throws {Error} when better-sqlite3 is missing or the file cannot be opened.
 * @example
 * const store = new SqliteDedupStore({ path: './data/webhooks.db' })
 */
export class SqliteDedupStore implements DedupStore {
  readonly #db: Database
  readonly #now: () => number
  readonly #claim: Statement
  readonly #inspect: Statement
  readonly #complete: Statement
  readonly #release: Statement
  readonly #purge: Statement
  readonly #durable: boolean
  readonly #commitBatch: (claims: PendingClaim[], completes: PendingComplete[], now: number) => [ClaimResult[], boolean[]]
  #pendingClaims: PendingClaim[] = []
  #pendingCompletes: PendingComplete[] = []
  #flushScheduled = false
  /** The WAL file, synced on the thread pool after commits (durability 'full'); undefined → FULL pragma per batch. */
  #walFd: number | undefined
  /** Syncs still running; `close()` waits for them. */
  readonly #syncing = new Set<Promise<void>>()
  #claimsSincePurge = 0
  #closed = false

  constructor(options: SqliteDedupStoreOptions) {
    if (options === null || typeof options !== 'object' || typeof options.path !== 'string' || options.path.length === 0) {
      throw new TypeError(`${PACKAGE} SqliteDedupStore needs { path }: the database file to use.`)
    }
    const durability = options.durability ?? 'full'
    if (durability !== 'full' && durability !== 'normal') throw new TypeError(`${PACKAGE} durability must be 'full' or 'normal'.`)
    const table = options.table ?? DEFAULT_SQLITE_TABLE
    if (!TABLE_NAME_PATTERN.test(table)) throw new TypeError(`${PACKAGE} table must be a plain SQL identifier (letters, digits, _).`)
    this.#now = options.now ?? Date.now
    const Driver = loadDriver()
    this.#db = new Driver(options.path, { timeout: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS })
    try {
      this.#db.pragma('journal_mode = WAL')
      // Commits never block on the disk; 'full' makes completes durable with an fdatasync of the WAL.
      this.#durable = durability === 'full'
      this.#db.pragma('synchronous = NORMAL')
      this.#db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`)
      this.#db.exec(`
        CREATE TABLE IF NOT EXISTS ${table} (
          key TEXT PRIMARY KEY NOT NULL,
          done INTEGER NOT NULL,
          token TEXT,
          attempt INTEGER NOT NULL,
          expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS ${table}_expires_at ON ${table} (expires_at);
      `)
      // One atomic statement decides ownership: insert a new key, or take over one whose lease
      // or retention has expired. RETURNING is read with .all() so the statement never stays
      // open (an open statement blocks WAL checkpoints).
      this.#claim = this.#db.prepare(`
        INSERT INTO ${table} (key, done, token, attempt, expires_at) VALUES (@key, 0, @token, 1, @now + @ms)
        ON CONFLICT (key) DO UPDATE SET
          attempt = CASE WHEN done = 1 THEN 1 ELSE attempt + 1 END,
          done = 0, token = excluded.token, expires_at = excluded.expires_at
        WHERE expires_at <= @now
        RETURNING attempt`)
      this.#inspect = this.#db.prepare(`SELECT done, expires_at FROM ${table} WHERE key = @key`)
      this.#complete = this.#db.prepare(
        `UPDATE ${table} SET done = 1, token = NULL, expires_at = @now + @ms WHERE key = @key AND token = @token AND done = 0`,
      )
      this.#release = this.#db.prepare(`UPDATE ${table} SET token = NULL, expires_at = 0 WHERE key = @key AND token = @token AND done = 0`)
      this.#purge = this.#db.prepare(
        `DELETE FROM ${table} WHERE key IN (SELECT key FROM ${table} WHERE expires_at <= @now LIMIT ${PURGE_BATCH_ROWS})`,
      )
      if (this.#durable) this.#walFd = openWal(options.path)
      const complete = this.#complete
      this.#commitBatch = this.#db.transaction(
        (claims: PendingClaim[], completes: PendingComplete[], now: number): [ClaimResult[], boolean[]] => [
          claims.map((item) => this.#claimSync(item.key, item.leaseMs, now)),
          completes.map((item) => complete.run({ key: item.key, token: item.token, now, ms: item.ms }).changes === 1),
        ],
      )
    } catch (error) {
      this.#db.close()
      throw error
    }
  }

  claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    if (this.#closed) return Promise.reject(closedError())
    return new Promise((resolve, reject) => {
      this.#pendingClaims.push({ key, leaseMs: opts.leaseMs, resolve, reject })
      this.#scheduleFlush()
    })
  }

  #scheduleFlush(): void {
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(this.#flush)
    }
  }

  /** One claim inside the batch's transaction, at the batch's `now`. */
  #claimSync(key: string, leaseMs: number, now: number): ClaimResult {
    if (++this.#claimsSincePurge >= PURGE_EVERY_CLAIMS) {
      this.#claimsSincePurge = 0
      this.#purge.run({ now })
    }
    const token = crypto.randomUUID()
    const [row] = this.#claim.all({ key, token, now, ms: leaseMs }) as { attempt: number }[]
    if (row) return { status: 'acquired', claim: { key, token, attempt: row.attempt } }
    // The upsert took the write lock, held until the batch commits: the row that stopped it is
    // still there, and still live at `now`.
    const held = this.#inspect.get({ key }) as { done: number; expires_at: number }
    if (held.done === 1) return { status: 'duplicate' }
    return { status: 'in_flight', retryAfterMs: Math.max(1, held.expires_at - now) }
  }

  complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    if (this.#closed) return Promise.reject(closedError())
    return new Promise((resolve, reject) => {
      this.#pendingCompletes.push({ key: claim.key, token: claim.token, ms: opts.retentionMs, resolve, reject })
      this.#scheduleFlush()
    })
  }

  /**
   * Commits every pending claim and complete in one transaction; claims settle at once, completes
   * after a WAL sync with 'full'.
   */
  readonly #flush = (): void => {
    this.#flushScheduled = false
    const claims = this.#pendingClaims
    const batch = this.#pendingCompletes
    if (claims.length === 0 && batch.length === 0) return
    this.#pendingClaims = []
    this.#pendingCompletes = []
    let claimed: ClaimResult[]
    let results: boolean[]
    const syncedByPragma = this.#durable && this.#walFd === undefined && batch.length > 0
    try {
      if (this.#closed) throw closedError()
      if (syncedByPragma) this.#db.pragma('synchronous = FULL')
      try {
        ;[claimed, results] = this.#commitBatch(claims, batch, this.#now())
      } finally {
        if (syncedByPragma) this.#db.pragma('synchronous = NORMAL')
      }
    } catch (error) {
      for (const item of claims) item.reject(error)
      for (const item of batch) item.reject(error)
      return
    }
    for (let i = 0; i < claims.length; i++) (claims[i] as PendingClaim).resolve(claimed[i] as ClaimResult)
    if (batch.length === 0) return
    const settle = (error?: unknown): void => {
      for (let i = 0; i < batch.length; i++) {
        const item = batch[i] as PendingComplete
        if (error === undefined) item.resolve(results[i] as boolean)
        else item.reject(error)
      }
    }
    if (this.#walFd === undefined) settle()
    else this.#sync(settle)
  }

  /** One fdatasync of the WAL, started now (after the batch's commit); settles that batch when it ends. */
  #sync(settle: (error?: unknown) => void): void {
    const done = new Promise<void>((resolve) => {
      fdatasync(this.#walFd as number, (error) => {
        settle(
          error === null
            ? undefined
            : new Error(
                `${PACKAGE} the database file could not be synced to disk (${error.code ?? 'I/O error'}); the event will be retried.`,
                {
                  cause: error,
                },
              ),
        )
        resolve()
      })
    })
    this.#syncing.add(done)
    void done.then(() => this.#syncing.delete(done))
  }

  release(claim: Claim): Promise<boolean> {
    try {
      this.#assertOpen()
      return Promise.resolve(this.#release.run({ key: claim.key, token: claim.token }).changes === 1)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Deletes up to one batch of expired rows; returns how many went. Runs by itself every 1,000 claims. */
  purgeExpired(): number {
    this.#assertOpen()
    return this.#purge.run({ now: this.#now() }).changes
  }

  /** Commits and syncs the completes already asked for, checkpoints the WAL and closes the file. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#flush()
    this.#closed = true
    await Promise.all(this.#syncing)
    try {
      this.#db.pragma('wal_checkpoint(TRUNCATE)')
    } finally {
      this.#db.close()
      if (this.#walFd !== undefined) closeSync(this.#walFd)
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw closedError()
  }
}

/** Opens the WAL file SQLite writes next to the (symlink-resolved) database, or undefined if it is not there. */
function openWal(path: string): number | undefined {
  if (path === ':memory:' || path === '' || path.startsWith('file:')) return undefined
  try {
    return openSync(`${realpathSync(path)}-wal`, 'r+')
  } catch {
    return undefined
  }
}

function closedError(): Error {
  return new Error(`${PACKAGE} this SqliteDedupStore was closed.`)
}
