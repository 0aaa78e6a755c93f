/**
 * The schema version of a PostgreSQL store's tables: read from `<table>_schema` when the store
 * opens; a newer one is refused before any other statement, an older one (or none: 0.1.0 wrote
 * none) is upgraded by the store when it may create its tables (schema.ts, `upgradeTablesSql`).
 */
import { newerSchemaError, type SchemaStamp } from '../schema-version.js'
import { PACKAGE } from './errors.js'
import { POSTGRES_SCHEMA_VERSION } from './schema.js'

type Query = <Row>(text: string, values?: unknown[]) => Promise<{ rows: Row[]; rowCount: number | null }>

/**
 * The stamp of `table`'s tables: undefined when there is none, `'unreadable'` when the table is
 * there but this role may not read it (a least-privilege role granted only the dedup table).
 * @param query Runs one statement.
 * @param table The dedup table.
 * @example
 * const found = await readPostgresStamp(query, 'email_webhook_dedup')
 */
export async function readPostgresStamp(query: Query, table: string): Promise<SchemaStamp | 'unreadable' | undefined> {
  const name = `${table}_schema`
  const found = await query<{ readable: boolean | null }>(
    `SELECT CASE WHEN to_regclass($1) IS NULL THEN NULL ELSE has_table_privilege($1, 'SELECT') END AS readable`,
    [name],
  )
  const readable = found.rows[0]?.readable
  if (readable === null || readable === undefined) return undefined
  if (!readable) return 'unreadable'
  const row = (await query<{ version: number; written_by: string }>(`SELECT version, written_by FROM ${name} WHERE id`)).rows[0]
  return row && { version: row.version, writtenBy: row.written_by }
}

/**
 * Refuses tables stamped with a version newer than this build's.
 * @throws {DedupStoreError} `misconfigured`, naming both versions and the release that wrote them.
 * @example
 * refuseNewerPostgresSchema(found, 'email_webhook_dedup', 'PostgreSQL at db:5432/app')
 */
export function refuseNewerPostgresSchema(found: SchemaStamp | 'unreadable' | undefined, table: string, target: string): void {
  if (typeof found === 'object' && found.version > POSTGRES_SCHEMA_VERSION) {
    throw newerSchemaError(PACKAGE, `the table ${table} on ${target}`, found, POSTGRES_SCHEMA_VERSION)
  }
}
