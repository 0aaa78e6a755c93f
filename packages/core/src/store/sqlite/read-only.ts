/**
 * `SqliteDedupStore({ readOnly: true })`: an existing store file opened for `lookup` only, for
 * recovery tooling beside a running receiver. better-sqlite3 opens it `readonly` and
 * `fileMustExist`, so a mistyped path is an error, never a new empty file; no pragma that writes,
 * no table creation or upgrade, no checkpoint on close; only the two reads `lookup` needs are
 * prepared (schema.ts's `findDone` over every generation, through the view `<table>_done`, and
 * `findHeldLease`). A file whose schema stamp
 * is newer than this build's is refused, as a writing store refuses it.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { DedupStoreError } from '@email-webhooks/core'
import { openError, PACKAGE } from './errors.js'
import { readSchemaStamp, refuseNewerSchema } from './schema.js'
import type { Database, DatabaseConstructor, Statements } from './types.js'

type ReadOnlyConstructor = new (path: string, options: { timeout: number; readonly: true; fileMustExist: true }) => Database

/**
 * The error of every call that would write to a read-only store.
 * @param path The store's file.
 * @example
 * return Promise.reject(readOnlyError(path))
 */
export function readOnlyError(path: string): DedupStoreError {
  return new DedupStoreError(
    'misconfigured',
    `${PACKAGE} this SqliteDedupStore opened ${resolve(path)} with readOnly: true, so only lookup() works; a receiver needs a store opened without readOnly.`,
  )
}

/**
 * Opens an existing file read-only and prepares the reads of `lookup`. The other statements are
 * absent: the store refuses every call that would use them.
 * @param Driver better-sqlite3's Database class.
 * @param path The file; it must exist.
 * @param busyTimeoutMs How long a read waits for a lock.
 * @param table The done records' table (leases in `<table>_lease`).
 * @throws {DedupStoreError} `misconfigured` when the file does not exist, is not a database, has no dedup table or has a newer schema.
 * @example
 * const { db, statements } = openReadOnly(loadDriver(), path, 5_000, DEFAULT_SQLITE_TABLE)
 */
export function openReadOnly(
  Driver: DatabaseConstructor,
  path: string,
  busyTimeoutMs: number,
  table: string,
): { db: Database; statements: Statements } {
  const full = resolve(path)
  if (path === ':memory:' || !existsSync(full)) {
    throw new DedupStoreError(
      'misconfigured',
      `${PACKAGE} no SQLite file at ${full}: readOnly opens an existing dedup file and never creates one. Check the path (the receiver's EMAIL_WEBHOOKS_DB, or ./.email-webhooks/dedup.db in its working folder).`,
    )
  }
  let db: Database
  try {
    db = new (Driver as unknown as ReadOnlyConstructor)(path, { timeout: busyTimeoutMs, readonly: true, fileMustExist: true })
  } catch (error) {
    throw openError(path, error)
  }
  try {
    // A layout newer than this build's may not mean what these reads think: refused, as a writer would.
    const found = readSchemaStamp(db, table)
    refuseNewerSchema(found, path, table)
    // From version 3 done records are in generations, all seen through the view `<table>_done`.
    const done = found !== undefined && found.version >= 3 ? `${table}_done` : table
    const reads = {
      findDone: db.prepare(`SELECT max(expires_at) FROM ${done} WHERE key = ?`).pluck(),
      findHeldLease: db.prepare(`SELECT expires_at FROM ${table}_lease WHERE key = ? AND token IS NOT NULL`).pluck(),
    }
    return { db, statements: reads as Statements }
  } catch (error) {
    db.close()
    if (/no such table/.test(String((error as Error | undefined)?.message))) {
      throw new DedupStoreError(
        'misconfigured',
        `${PACKAGE} ${full} has no dedup table ${table} (and ${table}_lease): it is not a receiver's dedup file, the receiver uses another table, or the file is from before 0.2 (start the receiver once to upgrade it).`,
        { cause: error },
      )
    }
    throw openError(path, error)
  }
}
