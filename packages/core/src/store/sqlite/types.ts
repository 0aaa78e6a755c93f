/**
 * The shapes the SQLite store's files share: the part of better-sqlite3 it uses, and its prepared
 * statements (the done and lease tables', schema.ts; the order tables', order.ts; the purge walks,
 * purge.ts). Types only: every file of the store may import them, and this one imports none.
 */

/** The part of a better-sqlite3 statement the store uses. */
export interface Statement {
  run(...params: unknown[]): { changes: number }
  all(...params: unknown[]): unknown[]
  get(...params: unknown[]): unknown
  pluck(toggle?: boolean): Statement
  raw(toggle?: boolean): Statement
}
/** The part of a better-sqlite3 database the store uses. */
export interface Database {
  pragma(source: string, options?: { simple?: boolean }): unknown
  exec(source: string): unknown
  prepare(source: string): Statement
  transaction<A extends unknown[], R>(fn: (...args: A) => R): ((...args: A) => R) & { immediate: (...args: A) => R }
  close(): unknown
  /** Whether a transaction is open (false after an error that rolled it back whole). */
  readonly inTransaction: boolean
}
export type DatabaseConstructor = new (path: string, options?: { timeout?: number }) => Database

/** The statements a cursor walks one table with (a `key` and an `expires_at` column). */
export interface Walked {
  /** (after, offset) → the key `offset + 1` rows after `after`, in key order. */
  purgeWindowEnd: Statement
  /** (after, upTo, now): rows in (after, upTo] that expired by `now`. */
  purgeRange: Statement
  /** (after, now): rows after `after` that expired by `now`. */
  purgeTail: Statement
}

/** The store's prepared statements; parameters are positional, in the order of the `?`s. The walk (`Walked`) is the done table's. */
export interface Statements extends Walked {
  /** (key) → expires_at of the done record, if any. */
  findDone: Statement
  /** (key, token, expiresAt): a first lease (attempt 1); changes 1 when the key had no lease row. */
  newLease: Statement
  /** (token, expiresAt, key, now): takes a lapsed or released lease over (attempt + 1); changes 1 when it did. */
  retakeLease: Statement
  /** (key) → the lease row's attempt. */
  findAttempt: Statement
  /** (key) → expires_at of the lease row. */
  findLease: Statement
  /** (key, token): the lease, if this token still owns it; changes 1 when it did. */
  endLease: Statement
  /** (key, expiresAt): insert or refresh the done record. */
  markDone: Statement
  /** (now, key, token): give the lease up at once, keeping its attempt count (the row is purged an hour later). */
  releaseLease: Statement
  /** (key) → expires_at of a held (not released) lease. */
  findHeldLease: Statement
  /** (expiresAt, key, token, now): renews the lease if this token holds it live; changes 1 when it did. */
  extendLease: Statement
  /** The lease table's purge walk (rows that ended before the cutoff given as `now`). */
  leases: Walked
  /** The mark table's statements (ordering capability). */
  marks: MarkStatements
}

/** The prepared statements of the mark table (with its purge walk) and of the order-key locks. */
export interface MarkStatements extends Walked {
  /** (key, now) → the live mark's row. */
  readMark: Statement
  /** (key, created_at ms, event id, type, expiresAt, now): set the mark if none is live or this one is newer; renew its expiry. */
  advanceMark: Statement
  /** (key) → expires_at of the claim that holds the order key, if any row. */
  findLock: Statement
  /** (key, token, expiresAt): the order key is held by this claim until then. */
  takeLock: Statement
  /** (key, token): frees the order key if this claim still holds it. */
  freeLock: Statement
  /** (expiresAt, key, token): the order key stays held by this claim until then, if it still holds it. */
  extendLock: Statement
  /** The lock table's purge walk (locks whose lease lapsed). */
  locks: Walked
  /** (key, now) → [handled, reconciled] of a live fact. */
  readFact: Statement
  /** (key, handled, reconciled, expiresAt, now): add to a fact's counts (a lapsed one counts from zero; reconciled ≥ 0) and renew it. */
  changeFact: Statement
  /** The fact table's purge walk. */
  facts: Walked
}
