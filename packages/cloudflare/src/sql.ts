/**
 * The SQL both Cloudflare stores run, on D1 (in one `batch()`, D1's only transaction) and inside a
 * Durable Object (SQLite storage, in one `transactionSync`): the dedup table, its order tables
 * (marks, the claim that holds each order key, fact counts) and each operation as a list of
 * statements run in one transaction. Statements are written with `:name` parameters and compiled
 * once to the positional `?N` form both drivers take, with exactly the values each uses.
 * Times are ms since the epoch, passed as `:now` (the caller's clock: one value for the whole
 * transaction). Event ids compare in SQLite's BINARY collation: the byte order of their UTF-8
 * text, as `compareOrderPositions`.
 */

import { stampStatements } from './schema.js'

/** One statement with its values, ready for `prepare(sql).bind(...params)` or `sql.exec(sql, ...params)`. */
export interface Statement {
  sql: string
  params: unknown[]
}

/** A released or lapsed lease keeps its attempt count this long; rows are purged this long after they expired. */
export const LEASE_MEMORY_MS: number = 60 * 60 * 1000
/** Rows one purge statement deletes at most. */
export const PURGE_BATCH_ROWS: number = 64

const TABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,50}$/

/**
 * Checks that `table` is a plain SQL identifier the stores may splice into their statements.
 * @throws {TypeError} when it is not letters, digits and `_` (at most 51, not starting with a digit).
 */
export function assertTableName(table: unknown, prefix: string): asserts table is string {
  if (typeof table !== 'string' || !TABLE_NAME_PATTERN.test(table)) {
    throw new TypeError(`${prefix} table must be a plain SQL identifier (letters, digits, _; at most 51 characters).`)
  }
}

/** `:name` → `?N`, and the names in order, per statement text (each text is compiled once). */
const compiled = new Map<string, { sql: string; names: string[] }>()

/** `text` with its `:name` parameters bound from `values`. */
export function statement(text: string, values: Record<string, unknown>): Statement {
  let entry = compiled.get(text)
  if (entry === undefined) {
    const names: string[] = []
    const sql = text.replace(/:([a-z]+)/g, (_, name: string) => {
      let index = names.indexOf(name)
      if (index < 0) index = names.push(name) - 1
      return `?${index + 1}`
    })
    entry = { sql, names }
    compiled.set(text, entry)
  }
  return {
    sql: entry.sql,
    params: entry.names.map((name) => {
      const value = values[name]
      if (value === undefined) throw new TypeError(`statement parameter :${name} has no value`)
      return value
    }),
  }
}

/** The `CREATE` statements of the dedup table and its order tables (each one statement, as D1's `batch` and `exec` want). */
export function createTableStatements(table: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY NOT NULL, done INTEGER NOT NULL, token TEXT, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${table}_expires_at ON ${table} (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${table}_order (key TEXT PRIMARY KEY NOT NULL, created_at_ms INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL, expires_at INTEGER NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${table}_order_exp ON ${table}_order (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${table}_order_lock (key TEXT PRIMARY KEY NOT NULL, token TEXT NOT NULL, expires_at INTEGER NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${table}_lock_exp ON ${table}_order_lock (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${table}_order_fact (key TEXT PRIMARY KEY NOT NULL, handled INTEGER NOT NULL, reconciled INTEGER NOT NULL, expires_at INTEGER NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${table}_fact_exp ON ${table}_order_fact (expires_at)`,
  ]
}

/**
 * The SQL that creates the stores' tables, for users who migrate D1 by hand (`wrangler d1
 * migrations`); then pass `createTable: false`.
 * @param table Table name; default `email_webhook_dedup`.
 * @example
 * // migrations/0001_email_webhooks.sql
 * console.log(cloudflareDedupTableSql())
 */
export function cloudflareDedupTableSql(table = 'email_webhook_dedup'): string {
  assertTableName(table, '[@email-webhooks/cloudflare]')
  return `${[...createTableStatements(table), ...stampStatements(table)].join(';\n')};\n`
}

/** A row of the dedup table holds its key while it is done, or a lease with a token, until expires_at. */
const LIVE = `expires_at > :now AND (done = 1 OR token IS NOT NULL)`
/** A row may be taken over: expired, or a released lease (no token). */
const FREE = (alias: string) => `${alias}.expires_at <= :now OR (${alias}.done = 0 AND ${alias}.token IS NULL)`

/** The statement texts of one table. */
export interface DedupSql {
  claim: string
  /** After `claim` in the same transaction: who holds the key now. */
  holder: string
  orderLock: string
  orderClaim: string
  orderRead: string
  complete: string
  advanceMark: string
  changeFact: string
  unlock: string
  release: string
  releaseLock: string
  extend: string
  extendLock: string
  lookup: string
  purge: string[]
}

/** The statements of `table` and of its order tables. */
export function dedupSql(table: string): DedupSql {
  const lock = `${table}_order_lock`
  const mark = `${table}_order`
  const fact = `${table}_order_fact`
  const newer =
    'm.expires_at <= :now OR excluded.created_at_ms > m.created_at_ms OR (excluded.created_at_ms = m.created_at_ms AND excluded.event_id > m.event_id)'
  const completed = `EXISTS (SELECT 1 FROM ${table} WHERE key = :key AND token = :done AND done = 1)`
  const takeOver = `ON CONFLICT (key) DO UPDATE SET attempt = CASE WHEN d.done = 1 THEN 1 ELSE d.attempt + 1 END,
    done = 0, token = excluded.token, expires_at = excluded.expires_at WHERE ${FREE('d')} RETURNING attempt`
  const purge = (name: string) =>
    `DELETE FROM ${name} WHERE key IN (SELECT key FROM ${name} WHERE expires_at <= :now - ${LEASE_MEMORY_MS} ORDER BY expires_at LIMIT ${PURGE_BATCH_ROWS})`
  return {
    claim: `INSERT INTO ${table} AS d (key, done, token, attempt, expires_at) VALUES (:key, 0, :token, 1, :now + :lease) ${takeOver}`,
    holder: `SELECT done, token, expires_at FROM ${table} WHERE key = :key`,
    // The order key's lock is taken only when the event itself is free, and a live lock is never taken over.
    orderLock: `INSERT INTO ${lock} AS l (key, token, expires_at) SELECT :okey, :token, :now + :lease
      WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE key = :key AND ${LIVE})
      ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at WHERE l.expires_at <= :now`,
    orderClaim: `INSERT INTO ${table} AS d (key, done, token, attempt, expires_at) SELECT :key, 0, :token, 1, :now + :lease
      WHERE EXISTS (SELECT 1 FROM ${lock} WHERE key = :okey AND token = :token) ${takeOver}`,
    orderRead: `SELECT d.done, d.token, d.expires_at, l.token AS lock_token, l.expires_at AS lock_expires_at,
      m.created_at_ms, m.event_id, m.type, f.handled, f.reconciled
      FROM (SELECT 1) AS one LEFT JOIN ${table} d ON d.key = :key LEFT JOIN ${lock} l ON l.key = :okey
      LEFT JOIN ${mark} m ON m.key = :okey AND m.expires_at > :now LEFT JOIN ${fact} f ON f.key = :fkey AND f.expires_at > :now`,
    // A done row keeps a token of its own (`:done`, new for each complete): the statements after it
    // in the transaction see that THIS complete landed, and a repeated complete changes nothing.
    complete: `UPDATE ${table} SET done = 1, token = :done, expires_at = :now + :retention WHERE key = :key AND token = :token AND done = 0 RETURNING 1`,
    advanceMark: `INSERT INTO ${mark} AS m (key, created_at_ms, event_id, type, expires_at) SELECT :okey, :ms, :id, :type, :now + :retention
      WHERE ${completed}
      ON CONFLICT (key) DO UPDATE SET
        created_at_ms = CASE WHEN ${newer} THEN excluded.created_at_ms ELSE m.created_at_ms END,
        event_id = CASE WHEN ${newer} THEN excluded.event_id ELSE m.event_id END,
        type = CASE WHEN ${newer} THEN excluded.type ELSE m.type END,
        expires_at = excluded.expires_at`,
    changeFact: `INSERT INTO ${fact} AS f (key, handled, reconciled, expires_at) SELECT :fkey, :handled, max(0, :reconciled), :now + :retention
      WHERE ${completed}
      ON CONFLICT (key) DO UPDATE SET
        handled = CASE WHEN f.expires_at <= :now THEN 0 ELSE f.handled END + excluded.handled,
        reconciled = max(0, CASE WHEN f.expires_at <= :now THEN 0 ELSE f.reconciled END + :reconciled),
        expires_at = excluded.expires_at`,
    unlock: `DELETE FROM ${lock} WHERE key = :okey AND token = :token AND ${completed}`,
    release: `UPDATE ${table} SET token = NULL, expires_at = :now WHERE key = :key AND token = :token AND done = 0 RETURNING 1`,
    // The lock goes with the token whether or not the lease still was this claim's: a claim that took
    // the key over took the lock over too, with its own token.
    releaseLock: `DELETE FROM ${lock} WHERE key = :okey AND token = :token`,
    extend: `UPDATE ${table} SET expires_at = :now + :lease WHERE key = :key AND token = :token AND done = 0 AND expires_at > :now RETURNING 1`,
    extendLock: `UPDATE ${lock} SET expires_at = :now + :lease WHERE key = :okey AND token = :token
      AND EXISTS (SELECT 1 FROM ${table} WHERE key = :key AND token = :token AND done = 0 AND expires_at = :now + :lease)`,
    lookup: `SELECT done, token, expires_at FROM ${table} WHERE key = :key`,
    purge: [purge(table), purge(mark), purge(lock), purge(fact)],
  }
}
