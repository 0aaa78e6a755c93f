/**
 * `SqliteDedupStore`: durable dedup in one SQLite file through better-sqlite3 (an optional peer
 * dependency, loaded only by this module). Several processes may share one file.
 *
 * Group commit: the claims and completes asked for while the event loop runs one turn share one
 * `BEGIN IMMEDIATE` transaction (flushed from `setImmediate`), committed without a blocking sync,
 * and so do the inbox's writes of that turn (each its own savepoint; an enqueue is answered after
 * the same sync as the completes).
 * A claim reads the done record and takes the lease in that transaction, so it is atomic across
 * processes. Leases live in a small table of their own; a complete deletes its lease and writes
 * the event's done record, once. With `durability: 'full'` every answer that a 2xx may rely on
 * (a complete, and a `duplicate` read from the file) waits for an `fdatasync` of the WAL that
 * started after its transaction (sync.ts, on libuv's thread pool, one at a time), so the event
 * loop never waits for the disk. Claims that acquire need no sync: a claim lost to a power cut
 * was never acknowledged. Keys this process completed and synced are remembered for a while, so
 * their duplicates answer without touching the file. After a failed sync the store refuses all
 * work until it is reopened. Ordering: a claim with `order` reads the mark in the same batch, a
 * complete with `order` advances it in the same transaction as the done record (order.ts).
 */

import { realpathSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import type { DedupStoreError } from '@email-webhooks/core'
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupKeyState, DedupStore, ExtendOptions } from '../types.js'

export { DEFAULT_SQLITE_TABLE, type SqliteDedupStoreOptions } from './options.js'

import { registerConsoleSource } from '../../console/registry.js'
import { withTimeout } from '../../timers.js'
import { commitBatch, DUPLICATE, type PendingClaim, type PendingComplete, type PendingWrite, runWrites } from './batch.js'
import { Checkpointer } from './checkpoint.js'
import { sqliteConsoleSource } from './console.js'
import { closedError, closeTimeoutError, commandError, fileSyncError, lateDiskWarning, openError, PACKAGE } from './errors.js'
import { Generations } from './generations.js'
import { SqliteInbox } from './inbox.js'
import { invalidDurations, invalidLease, resolveSqliteOptions, type SqliteDedupStoreOptions } from './options.js'
import { Purger } from './purge.js'
import { openReadOnly, readOnlyError } from './read-only.js'
import { type ReadStep, readerHere, readOffLoop, SqliteReader } from './reader.js'
import { RememberedKeys } from './remembered.js'
import { driverPath, loadDriver, openDatabase } from './schema.js'
import { isFilePath, probeSync, WalSync } from './sync.js'
import type { Database, Statements } from './types.js'

/**
 * Dedup store in a SQLite file.
 * @throws {DedupStoreError} `driver_missing` when better-sqlite3 cannot load, `misconfigured` when the file cannot be opened or is not a database (or, with `readOnly`, does not exist), `invalid_options` for bad options.
 * @example
 * const store = new SqliteDedupStore({ path: './data/webhooks.db' })
 */
export class SqliteDedupStore implements DedupStore {
  /** Ordering capability: marks in `<table>_order`. */
  readonly ordering = true as const
  readonly #db: Database
  readonly #sql: Statements
  readonly #path: string
  readonly #closeTimeoutMs: number
  readonly #warn: (message: string) => void
  /** The WAL close() syncs once before its checkpoint (a file store that writes); undefined otherwise. */
  readonly #probedWal: string | undefined
  readonly #now: () => number
  readonly #durable: boolean
  /** Syncs the WAL after commits (durability 'full'); undefined → each batch commits with synchronous = FULL. */
  readonly #sync: WalSync | undefined
  /** Set once if the checkpointer could not sync the database file: the store refuses all work from then on. */
  #fileFailure: DedupStoreError | undefined
  /** Undefined on a read-only store, which never writes. */
  readonly #purger: Purger | undefined
  /** The sealed generations of done records (generations.ts); undefined on a read-only store, which reads them through the view. */
  readonly #generations: Generations | undefined
  readonly #commit: (claims: PendingClaim[], completes: PendingComplete[], writes: PendingWrite[], now: number) => void
  /** Gives a lease up and frees the order key it holds, in one transaction. */
  readonly #release: (claim: Claim, now: number) => boolean
  /** Renews a live lease and the order key it holds, in one transaction. */
  readonly #extend: (claim: Claim, leaseMs: number, now: number) => boolean
  /** Reads a key's state from one snapshot. */
  readonly #read: (key: string, now: number) => DedupKeyState
  /** Keys completed (and synced) by this store → when their record expires. */
  readonly #remembered = new RememberedKeys()
  #claims: PendingClaim[] = []
  #completes: PendingComplete[] = []
  /** The inbox's writes waiting for the batch (enqueues, takes, finishes…): one transaction for all. */
  #writes: PendingWrite[] = []
  #flushScheduled = false
  #purgeScheduled = false
  #closed = false
  /** The first close() (a second call answers as it). */
  #closing: Promise<void> | undefined
  /** Checkpoints the WAL in a worker thread (checkpoint.ts); undefined for a read-only or in-memory store. */
  readonly #checkpointer: Checkpointer | undefined
  /** The console's reads, in a worker thread started on the first (reader.ts); undefined for an in-memory store. */
  readonly #reader: SqliteReader | undefined
  readonly #readOnly: boolean
  /** The store's inbox (entries in `<table>_inbox`); undefined on a read-only store. */
  readonly inbox: SqliteInbox | undefined

  constructor(options: SqliteDedupStoreOptions) {
    const { path, durable, table, busyTimeoutMs, now, readOnly, warn, generationRecords, closeTimeoutMs } = resolveSqliteOptions(options)
    this.#now = now
    this.#path = path
    this.#closeTimeoutMs = closeTimeoutMs
    this.#warn = warn
    this.#readOnly = readOnly
    const { db, statements } = (readOnly ? openReadOnly : openDatabase)(loadDriver(), path, busyTimeoutMs, table)
    this.#db = db
    this.#sql = statements
    // Resolved now (the file exists once opened), not at close(), where the disk may not answer.
    this.#probedWal = !readOnly && isFilePath(path) ? `${realpathSync(path)}-wal` : undefined
    this.#durable = durable
    try {
      this.#sync = durable ? WalSync.open(path) : undefined
    } catch (error) {
      db.close()
      throw openError(path, error)
    }
    const reason = (error: unknown) => String((error as Error | undefined)?.message ?? error)
    const generations = readOnly
      ? undefined
      : new Generations(db, table, {
          generationRecords,
          sealFailed: (error) =>
            warn(
              `${PACKAGE} ${path}: sealing a generation of done records failed (${reason(error)}); nothing is lost, the current table keeps growing and the store tries again after more events. If this repeats, check the disk's free space.`,
            ),
          hashFailed: (error) =>
            warn(
              `${PACKAGE} ${path}: hashing a sealed generation of done records failed (${reason(error)}); nothing is lost (its records are read from the file until it is hashed), the store starts it again at the next write. If this repeats, check the file and the disk.`,
            ),
        })
    this.#generations = generations
    try {
      // The sealed generations' hashes are loaded now (about 1 s at 10 million records), not in the first request's batch.
      if (generations) db.transaction(() => generations.sync(this.#now()))()
    } catch (error) {
      db.close()
      this.#sync?.close()
      throw openError(path, error)
    }
    this.#purger = generations ? new Purger(statements, generations) : undefined
    // Shared by the checkpointer's thread and the reading thread (reader.ts, READ_GATE).
    const gate = new SharedArrayBuffer(4)
    this.#checkpointer =
      readOnly || !isFilePath(path) || db.pragma('journal_mode', { simple: true }) !== 'wal'
        ? undefined
        : new Checkpointer({
            // Resolved now: the thread opens the file later, and the process may change directory meanwhile.
            path: realpathSync(path),
            driver: driverPath,
            pageSize: db.pragma('page_size', { simple: true }) as number,
            // Asked when the thread would start, not now: the process may be pinned to a core meanwhile.
            parallel: () => availableParallelism() > 1,
            gate,
            autocheckpoint: (pages) => {
              if (!this.#closed) db.pragma(`wal_autocheckpoint = ${pages}`)
            },
            resume: () => this.#scheduleFlush(),
            syncFailed: (reason) => {
              this.#fileFailure ??= fileSyncError(path, reason)
            },
            stopped: (reason) =>
              warn(
                `${PACKAGE} ${path}: the WAL checkpoint thread stopped (${reason}). The store checkpoints in its own commits again, every 4 MiB of WAL, pausing the event loop for each; nothing is lost. If this repeats, check that better-sqlite3 loads in a worker thread (node:worker_threads) and that the disk accepts writes.`,
              ),
          })
    // The operator's console (console.ts) and the inbox's counts read the file on a thread of their
    // own (reader.ts), so that a page or a metric over a week of records never holds up the
    // receiver's event loop. Only in WAL, where a reader never blocks the writing connection (a file
    // in another journal mode is only ever a read-only store's, opened on someone else's file).
    this.#reader =
      isFilePath(path) && db.pragma('journal_mode', { simple: true }) === 'wal'
        ? new SqliteReader({
            path: realpathSync(path),
            driver: driverPath,
            busyTimeoutMs,
            gate: this.#checkpointer ? gate : undefined,
            stopped: (reason) =>
              warn(
                `${PACKAGE} ${path}: the reading thread of the console and the inbox's counts stopped (${reason}). They read on the store's connection from now on, holding up the receiver's answers while they read; nothing is lost. If this repeats, check that better-sqlite3 loads in a worker thread (node:worker_threads).`,
              ),
          })
        : undefined
    // One way to read off the loop for the inbox's counts and the console: the reading thread, or
    // (without one, or once it is gone) the store's connection.
    const here = readerHere(db)
    const readSteps = (steps: ReadStep[]) => readOffLoop(this.#reader, steps, here, () => this.#refused())
    this.inbox = readOnly
      ? undefined
      : new SqliteInbox({
          db,
          table,
          path,
          now,
          refused: () => this.#writeRefused(),
          afterDurable: (then) => this.#afterDurable(then),
          readOffLoop: (sql, args) => readSteps([{ sql, args }]).then((rows) => rows[0] ?? []),
          batch: (write, durable = false) =>
            new Promise((resolve, reject) => {
              this.#writes.push({ write, durable, outcome: undefined, resolve, reject })
              this.#scheduleFlush()
            }),
        })
    const seal = db.transaction((written: number, now: number) => generations?.wrote(written, now))
    this.#commit = db.transaction((claims: PendingClaim[], completes: PendingComplete[], writes: PendingWrite[], now: number): void => {
      generations?.sync(now)
      const written = commitBatch(statements, generations, claims, completes, now)
      runWrites(db, writes)
      if (written > 0 || generations?.hashing) {
        try {
          // Its own savepoint: a seal that fails leaves the batch whole (the table is sealed later). Also
          // a batch of claims alone while a sealed generation waits to be hashed (a chunk each batch).
          seal(written, now)
        } catch (error) {
          generations?.sealFailed(error)
        }
      }
    }).immediate
    this.#release = db.transaction((claim: Claim, now: number): boolean => {
      const released = statements.releaseLease.run(now, claim.key, claim.token).changes === 1
      if (released && claim.orderKey !== undefined) statements.marks.freeLock.run(claim.orderKey, claim.token)
      return released
    }).immediate
    this.#extend = db.transaction((claim: Claim, leaseMs: number, now: number): boolean => {
      const extended = statements.extendLease.run(now + leaseMs, claim.key, claim.token, now).changes === 1
      if (extended && claim.orderKey !== undefined) statements.marks.extendLock.run(now + leaseMs, claim.orderKey, claim.token)
      return extended
    }).immediate
    this.#read = db.transaction((key: string, now: number): DedupKeyState => {
      generations?.sync(now)
      const done = this.#sql.findDone.get(key) as number | undefined
      if ((done !== undefined && done > now) || generations?.isDone(key, now)) return 'done'
      const lease = this.#sql.findHeldLease.get(key) as number | undefined
      return lease !== undefined && lease > now ? 'in_flight' : 'absent'
    })
    // The operator's console reads the file through its own statements (console.ts).
    registerConsoleSource(this, () => sqliteConsoleSource({ table, path, now, refused: () => this.#refused(), read: readSteps }))
  }

  claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    const refused = this.#writeRefused() ?? invalidDurations(opts, true)
    if (refused) return Promise.reject(refused)
    if (this.#remembered.isDone(key, this.#now())) return Promise.resolve(DUPLICATE)
    return new Promise((resolve, reject) => {
      this.#claims.push({ key, leaseMs: opts.leaseMs, order: opts.order, result: undefined, resolve, reject })
      this.#scheduleFlush()
    })
  }

  complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    const refused = this.#writeRefused() ?? invalidDurations(opts, false)
    if (refused) return Promise.reject(refused)
    return new Promise((resolve, reject) => {
      const { key, token } = claim
      this.#completes.push({
        key,
        token,
        retentionMs: opts.retentionMs,
        order: opts.order,
        orderKey: claim.orderKey,
        factChange: opts.factChange,
        done: false,
        resolve,
        reject,
      })
      this.#scheduleFlush()
    })
  }

  release(claim: Claim): Promise<boolean> {
    const refused = this.#writeRefused()
    if (refused) return Promise.reject(refused)
    try {
      const released = this.#release(claim, this.#now())
      if (this.#purger?.wrote(0, 1)) this.#schedulePurge()
      return Promise.resolve(released)
    } catch (error) {
      return Promise.reject(commandError(this.#path, error))
    }
  }

  /** Renews the claim's lease (and its order key) from now, while its token holds it live. Not synced: a renewal lost to a power cut only ends the lease sooner. */
  extend(claim: Claim, opts: ExtendOptions): Promise<boolean> {
    const refused = this.#writeRefused() ?? invalidLease(opts)
    if (refused) return Promise.reject(refused)
    try {
      return Promise.resolve(this.#extend(claim, opts.leaseMs, this.#now()))
    } catch (error) {
      return Promise.reject(commandError(this.#path, error))
    }
  }

  /** What the file knows of `key` now; `'done'` resolves once that record is on disk (durability 'full'). */
  lookup(key: string): Promise<DedupKeyState> {
    const refused = this.#refused()
    if (refused) return Promise.reject(refused)
    let state: DedupKeyState
    try {
      state = this.#read(key, this.#now())
    } catch (error) {
      return Promise.reject(commandError(this.#path, error))
    }
    if (state !== 'done' || this.#remembered.has(key)) return Promise.resolve(state)
    return new Promise((resolve, reject) => this.#afterDurable((error) => (error ? reject(error) : resolve(state))))
  }

  /**
   * Deletes every expired done record (one walk over the table) and leases released or lapsed over an hour ago.
   * The store also purges by itself as it writes; this is for scripts and tests.
   * @returns How many rows were deleted.
   * @throws {DedupStoreError} when the store is closed or failed.
   */
  purgeExpired(): number {
    const refused = this.#writeRefused()
    if (refused) throw refused
    try {
      return this.#db.transaction(() => this.#purger?.round(this.#now()) ?? 0).immediate()
    } catch (error) {
      this.#generations?.invalidate()
      throw commandError(this.#path, error)
    }
  }

  /**
   * Commits and syncs what was already asked for, checkpoints the WAL and closes the file. A second
   * call answers as the first.
   * @throws {DedupStoreError} `timeout` when the disk kept it waiting longer than `closeTimeoutMs`
   * (a sync still running, or the one it asks before its checkpoint): the store is closed, what
   * waited for the sync is rejected with the same error, and the file is left open until the
   * process ends, as a crash would leave it.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    // Ends a hold of the commits first, so that the flush below commits what waited.
    const stopped = this.#checkpointer?.stop()
    this.#flush()
    this.#closed = true
    // The disk's waits are bounded (the WAL's sync running, the checkpointer's copy and sync); a
    // console page still reading is not (a long count on a healthy disk), and finishes first: its
    // snapshot would keep the WAL from starting over. Then the disk answers one sync before the
    // checkpoint below, which syncs on the event loop, past any limit.
    let walAnswered = false
    await this.#waitForDisk(
      (async () => {
        const failure = await this.#sync?.idle()
        walAnswered = true
        await stopped
        return failure
      })(),
      () => (walAnswered ? 'thread' : 'wal'),
    )
    await this.#reader?.close()
    if (this.#probedWal) await this.#waitForDisk(probeSync(this.#probedWal), () => 'wal')
    this.#shut()
  }

  /**
   * `waited`, or at most `closeTimeoutMs` of it: past that close() gives up on the disk. Neither
   * the checkpoint nor SQLite's close (which checkpoints too, better-sqlite3 does not turn that off)
   * would return on a disk that does not answer, and either would stop the event loop: the file
   * stays open until the process ends, its handle reachable (better-sqlite3 closes a collected
   * one). Completes, duplicates and inbox entries that waited for the sync are not acknowledged:
   * they fail with the same error. Only the WAL descriptor of the sync is closed, once that sync
   * returns, if it ever does; then a warning says how long the disk took and, for a sync of the
   * WAL, whether it failed.
   * @param waited Resolves when the disk answered: with the WAL sync's error if it failed.
   * @param stuck What was still waited for when the limit passed: a sync of the WAL, or only the
   * checkpoint thread (whose sync of the database file reports nothing to close()).
   */
  async #waitForDisk(waited: Promise<DedupStoreError | undefined>, stuck: () => 'wal' | 'thread'): Promise<void> {
    const started = performance.now()
    if (
      (await withTimeout(
        waited.then(() => true),
        this.#closeTimeoutMs,
      )) !== undefined
    )
      return
    const error = closeTimeoutError(this.#path, this.#closeTimeoutMs)
    const part = stuck()
    this.#sync?.abandon(error)
    this.#remembered.clear()
    ABANDONED.add(this.#db)
    const sync = this.#sync
    void waited
      .then((failure) => {
        try {
          this.#warn(
            lateDiskWarning(this.#path, this.#closeTimeoutMs, performance.now() - started, part === 'wal' ? { failure } : 'thread'),
          )
        } finally {
          sync?.close()
        }
      })
      // A `warn` that throws, or a descriptor that cannot be closed on that disk: nothing is left to tell, and the process ends soon, as the error said.
      .catch(() => {})
    throw error
  }

  /** Checkpoints the WAL into the file (when nothing failed) and closes the file. */
  #shut(): void {
    try {
      if (!this.#readOnly && !this.#sync?.failure && !this.#fileFailure) this.#db.pragma('wal_checkpoint(TRUNCATE)')
    } finally {
      this.#db.close()
      this.#sync?.close()
      this.#remembered.clear()
    }
  }

  #refused(): Error | undefined {
    if (this.#closed) return closedError()
    return this.#sync?.failure ?? this.#fileFailure
  }

  #writeRefused(): Error | undefined {
    return this.#refused() ?? (this.#readOnly ? readOnlyError(this.#path) : undefined)
  }

  #scheduleFlush(): void {
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(this.#flush)
    }
  }

  /** Commits every pending claim, complete and inbox write in one transaction, then answers them (after a sync where a 2xx relies on them). */
  readonly #flush = (): void => {
    this.#flushScheduled = false
    // The checkpointer copies the WAL's last frames so that it can start over: the batch waits (resume() flushes it).
    if (this.#checkpointer?.mayCommit() === false) return
    const claims = this.#claims
    const completes = this.#completes
    const writes = this.#writes
    if (claims.length === 0 && completes.length === 0 && writes.length === 0) return
    this.#claims = []
    this.#completes = []
    this.#writes = []
    const refused = this.#refused()
    const now = this.#now()
    const byPragma = this.#durable && this.#sync === undefined
    try {
      if (refused) throw refused
      if (byPragma) this.#db.pragma('synchronous = FULL')
      try {
        this.#commit(claims, completes, writes, now)
      } finally {
        if (byPragma) this.#db.pragma('synchronous = NORMAL')
      }
    } catch (error) {
      this.#generations?.invalidate()
      const failure = commandError(this.#path, error)
      for (const item of claims) item.reject(failure)
      for (const item of completes) item.reject(failure)
      for (const item of writes) item.reject(failure)
      return
    }
    this.#answer(claims, completes, writes, now)
    this.#checkpointer?.committed(claims.length + completes.length + writes.length, writes.length > 0)
    if (this.#purger?.wrote(completes.length, claims.length)) this.#schedulePurge()
  }

  /**
   * Settles a committed batch; `now` is the clock the batch was committed at. What a 2xx may rely
   * on waits for one sync, asked for here, in the turn of the commit (a close() right after it
   * waits for that sync too).
   */
  #answer(claims: PendingClaim[], completes: PendingComplete[], writes: PendingWrite[], now: number): void {
    let duplicates = 0
    for (const item of claims) {
      if (item.result === DUPLICATE && this.#sync) duplicates++
      else item.resolve(item.result as ClaimResult)
    }
    // Durable writes (enqueues) are answered with the completes, after the sync.
    const durable: { item: PendingWrite; value: unknown }[] = []
    for (const item of writes) {
      const { outcome } = item
      if (!outcome?.ok) item.reject(commandError(this.#path, outcome?.error))
      else if (item.durable) durable.push({ item, value: outcome.value })
      else item.resolve(outcome.value)
    }
    if (duplicates === 0 && completes.length === 0 && durable.length === 0) return
    this.#afterDurable((error) => {
      for (const { item, value } of durable) {
        if (error) item.reject(error)
        else item.resolve(value)
      }
      for (const item of claims) {
        if (item.result !== DUPLICATE) continue
        if (error) item.reject(error)
        else item.resolve(DUPLICATE)
      }
      for (const item of completes) {
        if (error) item.reject(error)
        else {
          if (item.done) this.#remembered.remember(item.key, now + item.retentionMs)
          item.resolve(item.done)
        }
      }
    })
  }

  /** Runs `then` once what is committed now is on disk: after the next WAL sync, or at once without one. */
  #afterDurable(then: (error?: Error) => void): void {
    if (this.#sync) this.#sync.after(then)
    else then()
  }

  #schedulePurge(): void {
    if (this.#purgeScheduled) return
    this.#purgeScheduled = true
    setImmediate(() => {
      this.#purgeScheduled = false
      // While the checkpointer holds the commits the step waits too: the purger still owes it and
      // asks again after the next batch (as after a step that could not run).
      if (this.#refused() || this.#checkpointer?.holding) return
      try {
        this.#db
          .transaction(() => {
            const now = this.#now()
            this.#purger?.step(now)
            this.inbox?.forgetDone(now)
          })
          .immediate()
      } catch {
        // A purge that could not run (lock held by another process) is retried after the next writes.
        this.#generations?.invalidate()
      }
    })
  }
}

/** Files whose close() gave up on the disk: kept reachable until the process ends, so that no collection closes them on the event loop. */
const ABANDONED = new Set<Database>()
