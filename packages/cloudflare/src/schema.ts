/**
 * The schema version of the Cloudflare stores' tables (D1, and each Durable Object's SQLite
 * storage): recorded in `<table>_schema` (one row: version, written_by) when the tables are made,
 * read when a store opens them, and a newer one refused with a `misconfigured` DedupStoreError that
 * names both versions and the release that wrote it. Version 1 is the first (these stores are new
 * in 0.2.0); docs/releasing.md lists what each version changed.
 */
import { DedupStoreError } from '@email-webhooks/core'
import { PACKAGE } from './errors.js'

declare const __EMAIL_WEBHOOKS_CLOUDFLARE_VERSION__: string | undefined

/** The layout this build writes. */
export const CLOUDFLARE_SCHEMA_VERSION = 1

/** Who writes the stamp: this package and its version (set by its build; `0.0.0-dev` from source). */
export const WRITTEN_BY: string = `@email-webhooks/cloudflare ${
  typeof __EMAIL_WEBHOOKS_CLOUDFLARE_VERSION__ === 'string' ? __EMAIL_WEBHOOKS_CLOUDFLARE_VERSION__ : '0.0.0-dev'
}`

/** The statements that make the stamp table and record this version (never lowering a newer one). */
export function stampStatements(table: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table}_schema (id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1), version INTEGER NOT NULL, written_by TEXT NOT NULL)`,
    `INSERT INTO ${table}_schema (id, version, written_by) VALUES (1, ${CLOUDFLARE_SCHEMA_VERSION}, '${WRITTEN_BY.replaceAll("'", "''")}') ON CONFLICT (id) DO UPDATE SET version = excluded.version, written_by = excluded.written_by WHERE version < excluded.version`,
  ]
}

/** The statement that reads the stamp (its table must exist). */
export function readStampSql(table: string): string {
  return `SELECT version, written_by FROM ${table}_schema WHERE id = 1`
}

/**
 * Refuses a stamp newer than this build's.
 * @param row The stamp's row, or undefined when there is none.
 * @param where What holds the tables (`the D1 table email_webhook_dedup`).
 * @throws {DedupStoreError} `misconfigured`, naming both versions, the writer and what to upgrade.
 */
export function refuseNewerSchema(row: { version?: unknown; written_by?: unknown } | undefined, where: string): void {
  const version = Number(row?.version)
  if (row === undefined || !(version > CLOUDFLARE_SCHEMA_VERSION)) return
  const by = typeof row.written_by === 'string' ? row.written_by : undefined
  throw new DedupStoreError(
    'misconfigured',
    `${PACKAGE} ${where} has schema version ${version}${by ? ` (written by ${by})` : ''}, newer than this ${WRITTEN_BY} knows (up to version ${CLOUDFLARE_SCHEMA_VERSION}): a newer release upgraded it, and this one cannot use it safely, so it touches nothing. Upgrade @email-webhooks/cloudflare (and @email-webhooks/core beside it) to ${by ? `${by} or later` : 'the release that wrote it or later'} in every Worker bound to it; a schema is never downgraded.`,
  )
}
