/**
 * The tables of `PostgresDedupStore` (the dedup table, its order tables and their indexes, as SQL
 * for hand-run migrations), the table-name check, and the statements the store runs on them.
 */
import { WRITTEN_BY } from '../schema-version.js'
import { PACKAGE } from './errors.js'
import { ADDED_INBOX_COLUMNS, postgresInboxTableSql, postgresInboxUpgradeSql } from './inbox-sql.js'
import { anyMissing, lockedDdl } from './locked-ddl.js'
import { type PostgresOrderSql, postgresOrderSql, postgresOrderTableSql } from './order.js'
import { purgeBatch } from './purge.js'

/** Table used when `table` is not given. */
export const DEFAULT_POSTGRES_TABLE = 'email_webhook_dedup'
/**
 * The layout this build writes, stamped in `<table>_schema`: 1 is 0.1.0's (no stamp); 2 adds to
 * the inbox table a retried entry's history (failed_at, retried_at, retried_attempts).
 */
export const POSTGRES_SCHEMA_VERSION = 2
const TABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,50}$/

/**
 * The SQL that creates the store's tables and indexes, or brings those of an older version up to
 * this one, for users who migrate by hand (then pass `createTable: false`): the dedup table, its
 * order tables `<table>_order`, `_order_lock` and `_order_fact` (ordering; without them the store
 * still deduplicates and ordering is `unknown`), its inbox table `<table>_inbox` (inbox mode) and
 * `<table>_schema`, the layout's version (the store refuses tables stamped newer than it knows).
 * Every statement may run again. Regular, logged tables: an `UNLOGGED` one loses its rows in a crash.
 * The index of the inbox's dead entries (`<table>_inbox_dead`, added after 0.1.0) is built the
 * ordinary way, which blocks writes to the inbox table while it reads it: on a large inbox table of
 * an earlier version, build it first without blocking (`CREATE INDEX CONCURRENTLY IF NOT EXISTS
 * <table>_inbox_dead ON <table>_inbox (ended_at) WHERE state = 'dead'`; the store's warning gives it).
 * @param table Table name; default `email_webhook_dedup`.
 * @example
 * await migrate(postgresDedupTableSql())
 */
export function postgresDedupTableSql(table: string = DEFAULT_POSTGRES_TABLE): string {
  return tablesSql(table, true)
}

/** The store's tables; `deadIndex`: with the index of the inbox's dead entries (inbox-sql.ts). */
function tablesSql(table: string, deadIndex: boolean): string {
  assertTableName(table)
  return `CREATE TABLE IF NOT EXISTS ${table} (
  key text PRIMARY KEY,
  done boolean NOT NULL,
  token text,
  attempt integer NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ${table}_expires_at ON ${table} (expires_at);
${postgresOrderTableSql(table)}${postgresInboxTableSql(table, deadIndex)}${postgresInboxUpgradeSql(table, ADDED_INBOX_COLUMNS)}
${postgresSchemaStampSql(table)}`
}

/** The stamp table and this version's stamp (never lowering a newer one). */
function postgresSchemaStampSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table}_schema (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  version integer NOT NULL,
  written_by text NOT NULL
);
INSERT INTO ${table}_schema (id, version, written_by) VALUES (true, ${POSTGRES_SCHEMA_VERSION}, '${WRITTEN_BY.replaceAll("'", "''")}')
ON CONFLICT (id) DO UPDATE SET version = excluded.version, written_by = excluded.written_by WHERE ${table}_schema.version < excluded.version;
`
}

/**
 * The statements that bring the tables of `table` up to this version and stamp them, as one
 * implicit transaction under the store's advisory lock, run only when the stamp read under that
 * lock is still older or missing (another store may have upgraded them while this one waited for
 * the lock, and be writing them: locked-ddl.ts says why that matters). The index of the inbox's
 * dead entries only with `deadIndex` (the inbox table is not there yet): on an existing inbox table
 * of millions of rows its build would block enqueues and meet the statement limit, and fail the
 * store's open with it; the inbox adds it by size (inbox.ts).
 * @param table The table name.
 * @param deadIndex With the index of the inbox's dead entries.
 * @example
 * await query(upgradeTablesSql('email_webhook_dedup', false))
 */
export function upgradeTablesSql(table: string, deadIndex: boolean): string {
  return lockedDdl(
    table,
    `stamped IS NULL OR stamped < ${POSTGRES_SCHEMA_VERSION}`,
    tablesSql(table, deadIndex),
    `IF to_regclass('${table}_schema') IS NOT NULL THEN SELECT max(version) INTO stamped FROM ${table}_schema; END IF;`,
    'stamped integer;',
  )
}

/**
 * Checks that `table` is a plain SQL identifier the store may splice into its statements.
 * @param table The table name.
 * @throws {TypeError} when it is not letters, digits and `_` (at most 51 characters, not starting with a digit).
 * @example
 * assertTableName('email_webhook_dedup')
 */
export function assertTableName(table: string): void {
  if (typeof table !== 'string' || !TABLE_NAME_PATTERN.test(table)) {
    throw new TypeError(`${PACKAGE} table must be a plain SQL identifier (letters, digits, _; at most 51 characters).`)
  }
}

/**
 * Every table and index of the store in one transaction under an advisory lock keyed by the table
 * name (two sessions creating the tables at once would otherwise collide in the catalog), made only
 * when the dedup table is still missing once the lock is held (locked-ddl.ts).
 * @param table The table name.
 * @example
 * await pool.query(createTableSql('email_webhook_dedup'))
 */
export function createTableSql(table: string): string {
  return lockedDdl(table, anyMissing([table]), postgresDedupTableSql(table))
}

// A lease released or lapsed carries the attempt count the next claim continues (ctx.attempt),
// so it is kept this long. Release stamps its row with that purge time (a released row has no
// token and is claimable whatever its time says, so a clock step cannot hold it either): the
// leases released during a handler outage, which can be many, stay out of the purge's expiry
// range. A lapsed lease keeps its token, so its slow holder may still complete it, and is purged
// this long after it lapsed by a statement of its own.
const LEASE_MEMORY = `interval '1 hour'`
/** A row holds its key until expires_at while it is done or a lease with a token (a released lease has none). */
const HOLDS = '(done OR token IS NOT NULL)'
/**
 * The claim commits without waiting for its WAL flush, whatever the session says: a lease is not an
 * acknowledgement. A crash of the database can lose a lease committed this way (the sender's retry
 * then claims the event again and its handler runs again, which at-least-once allows, and a
 * complete of the lost lease finds no row: no 2xx). The complete that follows commits with
 * synchronous_commit on, and its flush carries the claim's WAL too. Referenced in FROM, or
 * PostgreSQL would not run it.
 */
const LAZY = `lazy AS (SELECT set_config('synchronous_commit', 'off', true))`
/** The milliseconds left until the row's expires_at, on the server's clock. */
const LEFT_MS = 'ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::float8 AS left_ms'

/** The statements of the dedup table (parameters `$1` key, `$2` token, `$3` lease or retention ms). */
export interface DedupSql {
  /** Returns `attempt` when it acquired, else `done` and `left_ms` of the live row that holds the key (all null after a lost race). */
  claim: string
  /** Who holds the key now (after a lost race). */
  inspect: string
  lookup: string
  complete: string
  /** One row when the key is done by the claim with attempt $2 ($1 key): complete keeps the attempt. */
  completedBy: string
  release: string
  /** Renews a live lease of the token ($1 key, $2 token, $3 lease ms); one row when it did. */
  extend: string
  purge: string
  purgeLapsed: string
  createTable: string
}

/** The statements of `table` and of its order tables. */
export function postgresStatements(table: string): { sql: DedupSql; order: PostgresOrderSql } {
  const expiresIn = (param: string) => `clock_timestamp() + ${param}::float8 * interval '1 millisecond'`
  // The claim reads the key first and writes only when no live row holds it: a duplicate or an
  // in-flight claim is then a plain read (no row lock, no transaction id, no WAL, no commit to
  // wait for) answered in the same round trip. ON CONFLICT still decides a race for the key.
  const cur = `cur AS (
  SELECT done, ${LEFT_MS} FROM ${table} WHERE key = $1 AND expires_at > clock_timestamp() AND ${HOLDS})`
  // From `source`'s rows (the ordered claim's lock), or when no live row holds the key.
  const insert = (source?: string) => `ins AS (
  INSERT INTO ${table} AS d (key, done, token, attempt, expires_at)
  SELECT $1, false, $2, 1, ${expiresIn('$3')} ${source ? `FROM ${source}` : 'WHERE NOT EXISTS (SELECT 1 FROM cur)'}
  ON CONFLICT (key) DO UPDATE SET
    attempt = CASE WHEN d.done THEN 1 ELSE d.attempt + 1 END,
    done = false, token = excluded.token, expires_at = excluded.expires_at
  WHERE d.expires_at <= clock_timestamp() OR (NOT d.done AND d.token IS NULL)
  RETURNING attempt)`
  const releaseSet = `token = NULL, expires_at = clock_timestamp() + ${LEASE_MEMORY} WHERE key = $1 AND token = $2 AND NOT done`
  // A renewal, like a claim, need not wait for its WAL flush: one lost to a crash only ends the lease sooner.
  const extendLease = `UPDATE ${table} SET expires_at = ${expiresIn('$3')} FROM lazy
  WHERE key = $1 AND token = $2 AND NOT done AND expires_at > clock_timestamp()`
  const sql: DedupSql = {
    claim: `WITH ${LAZY}, ${cur},
${insert()}
SELECT ins.attempt, cur.done, cur.left_ms FROM lazy LEFT JOIN ins ON true LEFT JOIN cur ON true`,
    // A released row (no token) holds nothing, whatever its time says: no row, so the claim runs again.
    inspect: `SELECT done, ${LEFT_MS} FROM ${table} WHERE key = $1 AND ${HOLDS}`,
    lookup: `SELECT done FROM ${table} WHERE key = $1 AND expires_at > clock_timestamp() AND ${HOLDS}`,
    // set_config(…, true) lasts for this statement's transaction and is read at its commit:
    // the completion is flushed to the WAL before the answer, even if the role or session
    // has synchronous_commit = off.
    complete: `WITH durable AS (SELECT set_config('synchronous_commit', 'on', true))
UPDATE ${table} SET done = true, token = NULL, expires_at = ${expiresIn('$3')}
FROM durable WHERE key = $1 AND token = $2 AND NOT done`,
    // Each claim of a key until it is done has its own attempt number (a takeover or a claim after
    // a release adds one; only a claim after the record's retention starts again at 1), and
    // complete leaves it: a done row with the claim's attempt was recorded by that claim.
    completedBy: `SELECT 1 FROM ${table} WHERE key = $1 AND attempt = $2 AND done`,
    release: `UPDATE ${table} SET ${releaseSet}`,
    extend: `WITH ${LAZY} ${extendLease}`,
    purge: purgeBatch(table, 'now()', '(done OR token IS NULL)'),
    purgeLapsed: purgeBatch(table, `now() - ${LEASE_MEMORY}`, 'NOT done AND token IS NOT NULL'),
    createTable: createTableSql(table),
  }
  const order = postgresOrderSql({
    table,
    lazy: LAZY,
    cur,
    insert,
    expiresIn,
    leftMs: LEFT_MS,
    releaseSet,
    extendLease,
    purgeBatch: (name) => purgeBatch(name, 'now()'),
  })
  return { sql, order }
}
