/**
 * The ordering capability of `SqliteDedupStore`: marks in `<table>_order` (order key → position,
 * type and expiry), read by a claim and advanced by a complete inside the group-commit
 * transaction that takes the lease or writes the done record; the claim that holds each order key
 * in `<table>_order_lock`, taken with the lease and freed by the complete or the release; the counts
 * of each fact (an email's events of one type and millisecond) in `<table>_order_fact`, read with the
 * claim and changed with the complete. Event ids compare with SQLite's
 * BINARY collation: the byte order of their UTF-8 text, as `compareOrderPositions`.
 */
import type { OrderMark } from '../../ordering/position.js'
import type { FactCounts, StoreOrderInput } from '../types.js'
import { prepareWalk } from './purge.js'
import type { Database, MarkStatements } from './types.js'

/**
 * The SQL that creates the mark table of `table` and its lock table: which claim holds each order
 * key (one event of an email at a time), until its complete, its release or the end of its lease.
 */
export function markTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table}_order (
    key TEXT PRIMARY KEY NOT NULL, created_at_ms INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL, expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS ${table}_order_lock (
    key TEXT PRIMARY KEY NOT NULL, token TEXT NOT NULL, expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS ${table}_order_fact (
    key TEXT PRIMARY KEY NOT NULL, handled INTEGER NOT NULL, reconciled INTEGER NOT NULL, expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;`
}

/** Prepares the mark and lock statements of `table` (its tables must exist). */
export function prepareMarks(db: Database, table: string): MarkStatements {
  const t = `${table}_order`
  const lock = `${table}_order_lock`
  const fact = `${table}_order_fact`
  const newer = `${t}.expires_at <= :now OR excluded.created_at_ms > ${t}.created_at_ms
    OR (excluded.created_at_ms = ${t}.created_at_ms AND excluded.event_id > ${t}.event_id)`
  return {
    readMark: db.prepare(`SELECT created_at_ms, event_id, type FROM ${t} WHERE key = ? AND expires_at > ?`).raw(),
    advanceMark: db.prepare(
      `INSERT INTO ${t} (key, created_at_ms, event_id, type, expires_at) VALUES (:key, :ms, :id, :type, :expires)
       ON CONFLICT (key) DO UPDATE SET
         created_at_ms = CASE WHEN ${newer} THEN excluded.created_at_ms ELSE ${t}.created_at_ms END,
         event_id = CASE WHEN ${newer} THEN excluded.event_id ELSE ${t}.event_id END,
         type = CASE WHEN ${newer} THEN excluded.type ELSE ${t}.type END,
         expires_at = excluded.expires_at`,
    ),
    findLock: db.prepare(`SELECT expires_at FROM ${lock} WHERE key = ?`).pluck(),
    takeLock: db.prepare(
      `INSERT INTO ${lock} (key, token, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at`,
    ),
    freeLock: db.prepare(`DELETE FROM ${lock} WHERE key = ? AND token = ?`),
    extendLock: db.prepare(`UPDATE ${lock} SET expires_at = ? WHERE key = ? AND token = ?`),
    locks: prepareWalk(db, lock),
    readFact: db.prepare(`SELECT handled, reconciled FROM ${fact} WHERE key = ? AND expires_at > ?`).raw(),
    changeFact: db.prepare(
      `INSERT INTO ${fact} (key, handled, reconciled, expires_at) VALUES (:key, :handled, max(0, :reconciled), :expires)
       ON CONFLICT (key) DO UPDATE SET
         handled = CASE WHEN ${fact}.expires_at <= :now THEN 0 ELSE ${fact}.handled END + :handled,
         reconciled = max(0, CASE WHEN ${fact}.expires_at <= :now THEN 0 ELSE ${fact}.reconciled END + :reconciled),
         expires_at = :expires`,
    ),
    facts: prepareWalk(db, fact),
    ...prepareWalk(db, t),
  }
}

/** The live counts of fact `key` at `now`, zeros when none (call inside the batch's transaction). */
export function readFact(statements: MarkStatements, key: string, now: number): FactCounts {
  const row = statements.readFact.get(key, now) as [number, number] | undefined
  return row === undefined ? { handled: 0, reconciled: 0 } : { handled: row[0], reconciled: row[1] }
}

/** The live mark of `key` at `now`, or null (call inside the batch's transaction). */
export function readMark(statements: MarkStatements, key: string, now: number): OrderMark | null {
  const row = statements.readMark.get(key, now) as [number, string, string] | undefined
  return row === undefined ? null : { createdAtMs: row[0], eventId: row[1], type: row[2] }
}

/** Advances the mark of `order.key` if newer and renews its expiry (call in the transaction that writes the done record). */
export function advanceMark(statements: MarkStatements, order: StoreOrderInput, expiresAt: number, now: number): void {
  const { mark } = order
  statements.advanceMark.run({ key: order.key, ms: mark.createdAtMs, id: mark.eventId, type: mark.type, expires: expiresAt, now })
}
