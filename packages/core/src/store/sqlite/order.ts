/**
 * The ordering capability of `SqliteDedupStore`: marks in `<table>_order` (order key → position,
 * type and expiry), read by a claim and advanced by a complete inside the group-commit
 * transaction that takes the lease or writes the done record. Event ids compare with SQLite's
 * BINARY collation: the byte order of their UTF-8 text, as `compareOrderPositions`.
 */
import type { OrderMark } from '../../ordering/position.js'
import type { StoreOrderInput } from '../types.js'
import { prepareWalk, type Walked } from './purge.js'
import type { Database, Statement } from './schema.js'

/** The prepared statements of the mark table (with its purge walk). */
export interface MarkStatements extends Walked {
  /** (key, now) → the live mark's row. */
  readMark: Statement
  /** (key, created_at ms, event id, type, expiresAt, now): set the mark if none is live or this one is newer; renew its expiry. */
  advanceMark: Statement
}

/** The SQL that creates the mark table of `table`. */
export function markTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table}_order (
    key TEXT PRIMARY KEY NOT NULL, created_at_ms INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL, expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;`
}

/** Prepares the mark statements of `table` (its mark table must exist). */
export function prepareMarks(db: Database, table: string): MarkStatements {
  const t = `${table}_order`
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
    ...prepareWalk(db, t),
  }
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
