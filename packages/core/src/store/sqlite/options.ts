/**
 * The options of `SqliteDedupStore`, checked once when it is made, with their defaults; and the
 * check of each call's durations.
 */

import type { DedupStoreError } from '@email-webhooks/core'
import { callDurationProblem, durationProblem } from '../durations.js'
import { invalidOption } from './errors.js'
import { DEFAULT_GENERATION_RECORDS } from './generations.js'

/** The `invalid_options` error for a call's durations, or undefined when they are whole milliseconds ≥ 1. */
export function invalidDurations(opts: { leaseMs?: unknown; retentionMs?: unknown }, withLease: boolean): DedupStoreError | undefined {
  const problem = callDurationProblem(opts, withLease)
  return problem === undefined ? undefined : invalidOption(problem)
}

/** The `invalid_options` error for an `extend`'s lease, or undefined when it is whole milliseconds ≥ 1. */
export function invalidLease(opts: { leaseMs?: unknown } | undefined): DedupStoreError | undefined {
  const problem = durationProblem('leaseMs', opts?.leaseMs)
  return problem === undefined ? undefined : invalidOption(problem)
}

/** The tables' name when `table` is not given (done records in `<table>_now` and its generations, leases in `<table>_lease`). */
export const DEFAULT_SQLITE_TABLE = 'email_webhook_dedup'
const DEFAULT_BUSY_TIMEOUT_MS = 5_000
/** How long close() waits for the disk at most. */
const DEFAULT_CLOSE_TIMEOUT_MS = 10_000
/** The longest delay a timer takes (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647
const TABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Options of {@link SqliteDedupStore}. */
export interface SqliteDedupStoreOptions {
  /** The database file; created if missing (its folder must exist). `':memory:'` is not durable. */
  path: string
  /**
   * `'full'`: a `complete`, and a `duplicate` answer (or `lookup`'s `'done'`), resolve only once
   * the record is fsynced, so acknowledged events survive power loss. `'normal'`: no fsync;
   * survives a process crash, not power loss.
   * @defaultValue `'full'`
   */
  durability?: 'full' | 'normal'
  /**
   * How long a write, and opening a new file, waits for another process's lock, whole ms.
   * @defaultValue `5000`
   */
  busyTimeoutMs?: number
  /**
   * The name the store's tables start with (a letter or `_`, then letters, digits, `_`; at most 63
   * characters): done records go to `<table>_now` and its sealed generations `<table>_g<n>` (listed
   * in `<table>_gen`; the view `<table>_done` reads them all), leases to `<table>_lease`, order
   * marks to `<table>_order`, the inbox to `<table>_inbox`.
   * @defaultValue `email_webhook_dedup`
   */
  table?: string
  /**
   * Clock in milliseconds, for tests.
   * @defaultValue `Date.now`
   */
  now?: () => number
  /**
   * Open an existing file for `lookup` only (recovery tooling beside a running receiver): no file
   * is created, nothing is written (no setup, no checkpoint); `claim`, `complete`, `release` and
   * `purgeExpired` reject with `misconfigured`.
   * @defaultValue `false`
   */
  readOnly?: boolean
  /**
   * Where the store's warnings go: the WAL checkpoint thread stopped (it could not load
   * better-sqlite3, or its checkpoints kept failing), so the store checkpoints in its own commits
   * again, pausing the event loop for each; the reading thread stopped; a generation of done
   * records could not be sealed (the current table then grows until a seal succeeds) or hashed
   * (its records are then read from the file on every claim until it is); the disk answered,
   * late, a sync that `close()` gave up on past `closeTimeoutMs` (how long it took, and whether it
   * failed: a slow disk or a dead one; only a process that lives on after the timeout sees it).
   * @defaultValue `console.warn`
   */
  warn?: (message: string) => void
  /**
   * Done records in the current table at which it is sealed as a generation (whole, at least 100).
   * A claim reads only the current table and, through an in-memory index of the sealed keys' hashes
   * (9–17 bytes a sealed record: 100 MiB at 10 million), the rare generation that may hold its key.
   * The default keeps the current table within SQLite's page cache; a small one is for tests that
   * seal often. The processes sharing a file may use different values.
   * @defaultValue `50000`
   */
  generationRecords?: number
  /**
   * How long `close()` waits for the disk, whole ms, each time it does: the WAL's sync still running
   * with the checkpoint thread's copy and sync, then one sync of the WAL it asks for before its final
   * checkpoint (which syncs on the event loop). A console read still running is waited for without
   * a limit (a long count on a healthy disk). A disk that stopped answering (a stalled network volume,
   * a failing device) would otherwise keep `close()`, and a graceful shutdown awaiting it, waiting
   * forever. Past it, `close()` rejects with `timeout`, what waited for the sync fails with the same
   * error (not acknowledged), and the file is left as a crash would leave it (with durability
   * `'full'` nothing acknowledged is lost: an event is acknowledged only after its sync). The stuck
   * sync still keeps the process from exiting: end it with SIGKILL. At most 2147483647.
   * @defaultValue `10000`
   */
  closeTimeoutMs?: number
}

/** The options after the checks, with defaults filled in. */
export interface ResolvedSqliteOptions {
  path: string
  durable: boolean
  table: string
  busyTimeoutMs: number
  now: () => number
  readOnly: boolean
  warn: (message: string) => void
  generationRecords: number
  closeTimeoutMs: number
}

/**
 * Checks the options of a `SqliteDedupStore` and fills in the defaults.
 * @throws {DedupStoreError} `invalid_options` naming the first bad option.
 */
export function resolveSqliteOptions(options: SqliteDedupStoreOptions): ResolvedSqliteOptions {
  if (options === null || typeof options !== 'object' || typeof options.path !== 'string' || options.path.length === 0) {
    throw invalidOption('SqliteDedupStore needs { path }: the database file to use.')
  }
  const durability = options.durability ?? 'full'
  if (durability !== 'full' && durability !== 'normal') throw invalidOption(`durability must be 'full' or 'normal'.`)
  const table = options.table ?? DEFAULT_SQLITE_TABLE
  if (!TABLE_NAME_PATTERN.test(table)) throw invalidOption('table must be a plain SQL identifier (a letter or _, then letters, digits, _).')
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0)
    throw invalidOption('busyTimeoutMs must be a whole number of milliseconds ≥ 0.')
  if (options.now !== undefined && typeof options.now !== 'function') throw invalidOption('now must be a function returning milliseconds.')
  const readOnly = options.readOnly === true
  if (options.warn !== undefined && typeof options.warn !== 'function') throw invalidOption('warn must be a function such as console.warn.')
  const warn = options.warn ?? ((message: string) => console.warn(message))
  const generationRecords = options.generationRecords ?? DEFAULT_GENERATION_RECORDS
  if (!Number.isSafeInteger(generationRecords) || generationRecords < 100)
    throw invalidOption('generationRecords must be a whole number ≥ 100.')
  const closeTimeoutMs = options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS
  if (!Number.isSafeInteger(closeTimeoutMs) || closeTimeoutMs < 1 || closeTimeoutMs > MAX_TIMER_MS)
    throw invalidOption(
      `closeTimeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMER_MS} (about 24.8 days, the longest timer).`,
    )
  return {
    path: options.path,
    durable: durability === 'full' && !readOnly,
    table,
    busyTimeoutMs,
    now: options.now ?? Date.now,
    readOnly,
    warn,
    generationRecords,
    closeTimeoutMs,
  }
}
