/**
 * The tables of `PostgresDedupStore`: the dedup table, its mark table (ordering) and their
 * indexes, as SQL for hand-run migrations, and the table-name check.
 */
import { postgresOrderTableSql } from './postgres-order.js'

const PACKAGE = '[@email-webhooks/core/postgres]'
/** Table used when `table` is not given. */
export const DEFAULT_POSTGRES_TABLE = 'email_webhook_dedup'
const TABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,50}$/

/**
 * The SQL that creates the store's tables and indexes, for users who migrate by hand (then pass
 * `createTable: false`): the dedup table and its mark table `<table>_order` (ordering; without it
 * the store still deduplicates and ordering is `unknown`). Regular, logged tables: an `UNLOGGED`
 * one loses its rows in a crash.
 * @param table Table name; default `email_webhook_dedup`.
 * @example
 * await migrate(postgresDedupTableSql())
 */
export function postgresDedupTableSql(table: string = DEFAULT_POSTGRES_TABLE): string {
  assertTableName(table)
  return `CREATE TABLE IF NOT EXISTS ${table} (
  key text PRIMARY KEY,
  done boolean NOT NULL,
  token text,
  attempt integer NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ${table}_expires_at ON ${table} (expires_at);
${postgresOrderTableSql(table)}`
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
 * name: two sessions creating the tables at once would otherwise collide in the catalog.
 * @param table The table name.
 * @example
 * await pool.query(createTableSql('email_webhook_dedup'))
 */
export function createTableSql(table: string): string {
  return `BEGIN;
SELECT pg_advisory_xact_lock(hashtext('email-webhooks:${table}'));
${postgresDedupTableSql(table)}COMMIT;`
}
