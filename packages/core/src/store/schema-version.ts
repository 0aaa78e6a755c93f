/**
 * Schema versions of the stores that keep data in a layout of their own (tables, keys): each store
 * records the version it wrote (SQLite and PostgreSQL in `<table>_schema`, Redis at
 * `<prefix>{inbox}:v`), reads it when it opens, upgrades an older layout, and refuses a newer one
 * with a `misconfigured` DedupStoreError that names both versions and the release that wrote it.
 * 0.1.0 wrote no stamp: its layout is version 1. docs/releasing.md lists what each version changed.
 */
// By package name, not '../errors.js': this module is bundled into each store's subpath (see sqlite/errors.ts).
import { DedupStoreError } from '@email-webhooks/core'

declare const __EMAIL_WEBHOOKS_CORE_VERSION__: string | undefined

/** The version of this build of `@email-webhooks/core` (set by its build; `0.0.0-dev` when run from source). */
export const CORE_VERSION: string = typeof __EMAIL_WEBHOOKS_CORE_VERSION__ === 'string' ? __EMAIL_WEBHOOKS_CORE_VERSION__ : '0.0.0-dev'

/** Who writes a stamp: the package and its version, so an older release can say which one to install. */
export const WRITTEN_BY: string = `@email-webhooks/core ${CORE_VERSION}`

/** What a store found in its stamp. */
export interface SchemaStamp {
  version: number
  /** The package and version that wrote it, when recorded. */
  writtenBy: string | undefined
}

/**
 * The error of a store that found its data in a layout newer than it knows: nothing was read or
 * written, and every call fails the same way until the package is upgraded.
 * @param prefix The store's message prefix (`[@email-webhooks/core/sqlite]`).
 * @param where What holds the data (`the SQLite file ./dedup.db (table email_webhook_dedup)`).
 * @param found The stamp read there.
 * @param supported The newest version this build knows.
 * @param packageName The package whose upgrade the message asks for.
 * @example
 * if (found.version > SQLITE_SCHEMA_VERSION) throw newerSchemaError(PACKAGE, `the SQLite file ${path}`, found, SQLITE_SCHEMA_VERSION)
 */
export function newerSchemaError(
  prefix: string,
  where: string,
  found: SchemaStamp,
  supported: number,
  packageName: string = '@email-webhooks/core',
  version: string = CORE_VERSION,
): DedupStoreError {
  const by = found.writtenBy ? ` (written by ${found.writtenBy})` : ''
  const target = found.writtenBy ? `${found.writtenBy} or later` : 'the release that wrote it or later'
  return new DedupStoreError(
    'misconfigured',
    `${prefix} ${where} has schema version ${found.version}${by}, newer than this ${packageName} ${version} knows (up to version ${supported}): a newer release upgraded it, and this one cannot read it safely, so it touches nothing. Upgrade ${packageName} (and the adapter packages beside it) to ${target} in every app and process that opens this store; a schema is never downgraded.`,
  )
}

/**
 * Reads a stamp's version from what a store keeps (a number or its text).
 * @returns The version, or undefined when it is not a whole number ≥ 1.
 * @example
 * parseVersion('2') // 2
 */
export function parseVersion(value: unknown): number | undefined {
  const version = typeof value === 'string' && /^[0-9]{1,9}$/.test(value) ? Number(value) : value
  return typeof version === 'number' && Number.isSafeInteger(version) && version >= 1 ? version : undefined
}
