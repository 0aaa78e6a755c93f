/**
 * The SQLite store's file: pragmas, the tables, the moves from older layouts, the schema version
 * stamp, and the prepared statements. Done records live in `<table>_now` (key → expiry, written
 * once per event) until it is sealed as a generation (generations.ts); leases in `<table>_lease` (a row per event in flight, deleted by
 * its complete; a released or lapsed one stays an hour, as it carries the attempt count); order
 * marks in `<table>_order` (order.ts). None has a secondary index: purge walks all three in key
 * order (purge.ts). The layout's version is in `<table>_schema` (one row: version, written_by), a
 * table of the store's rather than `PRAGMA user_version`, which is the file's: one file may hold
 * several stores' tables (the `table` option) or an app's own.
 */
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { DedupStoreError } from '@email-webhooks/core'
import { optionalDriver } from '../driver.js'
import { newerSchemaError, type SchemaStamp, WRITTEN_BY } from '../schema-version.js'
import { openError, PACKAGE } from './errors.js'
import { currentTableSql, moveToGenerations, placeholderSql, recreateDoneView } from './generations.js'
import { inboxTableSql, upgradeInbox } from './inbox.js'
import { markTableSql, prepareMarks } from './order.js'
import { prepareWalk } from './purge.js'
import type { Database, DatabaseConstructor, Statements } from './types.js'

/** better-sqlite3's Database class, loaded on first use; a `driver_missing` DedupStoreError when it cannot load. */
export const loadDriver: () => DatabaseConstructor = optionalDriver<DatabaseConstructor>(
  'better-sqlite3',
  (module) => module as DatabaseConstructor,
  `${PACKAGE} better-sqlite3 could not be loaded, so the SQLite dedup store is unavailable. Install it with \`npm install better-sqlite3\` (12 on Node 20; 13 on Node 22 and 24, where 12 can crash Node 24). It is a native module: if it is installed but failed to build, make sure python3, make and a C++ compiler are present and run \`npm rebuild better-sqlite3\`; with pnpm, allow its build script (pnpm approve-builds, or allowBuilds in pnpm-workspace.yaml).`,
)

/**
 * The file of the better-sqlite3 this process loaded (the checkpointer's worker thread requires the
 * same one): found in the module cache, so that a copy a loader hook chose (a build for another
 * Node ABI) is the one the thread loads too; else resolved by name.
 */
export function driverPath(): string {
  const require = createRequire(import.meta.url)
  const Driver = loadDriver()
  const loaded = Object.values(require.cache).find((module) => module?.exports === Driver)
  return loaded?.filename ?? require.resolve('better-sqlite3')
}

/**
 * The layout this build writes: 1 is 0.1.0's (no stamp); 2 adds to the inbox table the `ready`
 * marks of an ordered take and a retried entry's history (failed_at, retried_at, retried_attempts);
 * 3 keeps done records in generations (`<table>_now`, `<table>_g<id>`, `<table>_gen`, the view
 * `<table>_done`; `<table>` itself is gone, so that a process of an older release fails its claims
 * rather than miss sealed records).
 */
export const SQLITE_SCHEMA_VERSION = 3

const JOURNAL_SIZE_LIMIT_BYTES = 8 * 1024 * 1024
/** Page size of new files (SQLite's default is 4,096). */
const PAGE_SIZE_BYTES = 1_024
/**
 * WAL after which the writing connection checkpoints (SQLite's default is 1,000 pages, 4 MiB at
 * 4 KiB pages), and at which the checkpointer's thread restarts it once it runs (checkpoint.ts).
 */
export const AUTOCHECKPOINT_BYTES: number = 4 * 1024 * 1024
/**
 * Page cache of the connection, in KiB: SQLite's default, on purpose. After a B-tree split that
 * reorders pages, SQLite's next commit walks every slot of the page cache (pcache1Truncate), and
 * random event ids split pages often: with 16 MiB, a store whose table had outgrown the cache
 * spent 8–23 µs more CPU per event than with 2,000 KiB (bench/profile/README.md). Pages missed here
 * are read from the OS page cache.
 */
const CACHE_KIB = 2_000

/** Opens `path`, sets it up, creates or upgrades the tables and prepares the statements. */
export function openDatabase(
  Driver: DatabaseConstructor,
  path: string,
  busyTimeoutMs: number,
  table: string,
): { db: Database; statements: Statements } {
  let db: Database
  try {
    db = new Driver(path, { timeout: busyTimeoutMs })
  } catch (error) {
    throw openError(path, error)
  }
  try {
    // Takes effect only in a new file. Each done record dirties one page at a random place
    // (event ids are random UUIDs), so smaller pages mean less WAL written and synced per event.
    db.pragma(`page_size = ${PAGE_SIZE_BYTES}`)
    useWal(db, busyTimeoutMs)
    db.pragma('synchronous = NORMAL')
    db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`)
    const pageSize = db.pragma('page_size', { simple: true }) as number
    db.pragma(`wal_autocheckpoint = ${Math.ceil(AUTOCHECKPOINT_BYTES / pageSize)}`)
    db.pragma(`cache_size = -${CACHE_KIB}`)
    createTables(db, table, path)
    return { db, statements: prepare(db, table) }
  } catch (error) {
    db.close()
    throw openError(path, error)
  }
}

/**
 * Turns WAL on, waiting up to `busyTimeoutMs` for other processes. Converting a file to WAL needs
 * it to itself, and SQLite answers SQLITE_BUSY at once there instead of calling its busy handler:
 * processes that open a new file together (cluster workers starting) would otherwise fail to
 * start. Retried with growing pauses; once one process converted the file, WAL is a property of
 * the file and the others' pragma succeeds.
 */
function useWal(db: Database, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs
  for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 50)) {
    try {
      db.pragma('journal_mode = WAL')
      return
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() + pauseMs > deadline) throw error
    }
    // A synchronous pause: this runs once, in the store's constructor.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pauseMs)
  }
}

/**
 * The stamp in `<table>_schema`, or undefined when there is none (a new file, or one 0.1.0 wrote).
 * @param db An open file (read-only is fine).
 * @param table The store's table.
 * @example
 * const found = readSchemaStamp(db, 'email_webhook_dedup')
 */
export function readSchemaStamp(db: Database, table: string): SchemaStamp | undefined {
  const present = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).pluck().get(`${table}_schema`)
  if (present === undefined) return undefined
  const row = db.prepare(`SELECT version, written_by FROM ${table}_schema WHERE id = 1`).get() as
    | { version: number; written_by: string }
    | undefined
  return row && { version: row.version, writtenBy: row.written_by }
}

/**
 * Refuses a file whose layout is newer than this build's.
 * @throws {DedupStoreError} `misconfigured`, naming both versions and the release that wrote it.
 * @example
 * refuseNewerSchema(readSchemaStamp(db, table), path, table)
 */
export function refuseNewerSchema(found: SchemaStamp | undefined, path: string, table: string): void {
  if (found !== undefined && found.version > SQLITE_SCHEMA_VERSION) {
    const where = `the SQLite file ${path === ':memory:' ? path : resolve(path)} (table ${table})`
    throw newerSchemaError(PACKAGE, where, found, SQLITE_SCHEMA_VERSION)
  }
}

/**
 * Creates the tables of a new file, or brings an older one up to this build's layout, and stamps
 * it; all in one transaction that holds the write lock, so processes opening the file together
 * upgrade it once. A file stamped with this version is left as it is.
 */
function createTables(db: Database, table: string, path: string): void {
  const create = `
    ${currentTableSql(table)}
    CREATE TABLE IF NOT EXISTS ${table}_lease (
      key TEXT PRIMARY KEY NOT NULL, token TEXT, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    ${markTableSql(table)}
    ${inboxTableSql(table)}`
  db.transaction(() => {
    const found = readSchemaStamp(db, table)
    refuseNewerSchema(found, path, table)
    if (found?.version === SQLITE_SCHEMA_VERSION) return
    const columns = columnsOf(db, table)
    // Only the store's own layouts are moved: one table with `done` (before 0.1.0), or 0.1.0's and
    // 0.2's table of done records beside its lease table. An app's table of that name is refused,
    // never renamed or dropped.
    const beforeLeases = columns === 'attempt,done,expires_at,key,token'
    const oneTable = columns === 'expires_at,key' && columnsOf(db, `${table}_lease`).includes('token')
    if (columns !== '' && !beforeLeases && !oneTable) {
      throw new DedupStoreError('misconfigured', `${PACKAGE} table ${table} exists but is not the store's; pick another table name.`)
    }
    if (beforeLeases) {
      // Before 0.1.0 leases and done records were in one table with an index on expires_at: move both over.
      db.exec(`
      ALTER TABLE ${table} RENAME TO ${table}_v1;
      DROP INDEX IF EXISTS ${table}_expires_at;
      ${create}
      CREATE TABLE ${table} (key TEXT PRIMARY KEY NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO ${table} (key, expires_at) SELECT key, expires_at FROM ${table}_v1 WHERE done = 1;
      INSERT INTO ${table}_lease (key, token, attempt, expires_at) SELECT key, token, attempt, expires_at FROM ${table}_v1 WHERE done = 0;
      DROP TABLE ${table}_v1;`)
    } else {
      // CREATE … IF NOT EXISTS: also adds the tables of later layouts to an older file.
      db.exec(create)
    }
    // Version 2 to 3: the one table of done records becomes the first generation.
    if (columns !== '') moveToGenerations(db, table)
    db.exec(placeholderSql(table))
    recreateDoneView(db, table)
    // Version 1 to 2: the inbox's new columns and ready marks.
    upgradeInbox(db, table)
    db.exec(`CREATE TABLE IF NOT EXISTS ${table}_schema (
      id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1), version INTEGER NOT NULL, written_by TEXT NOT NULL
    )`)
    db.prepare(
      `INSERT INTO ${table}_schema (id, version, written_by) VALUES (1, ?, ?)
       ON CONFLICT (id) DO UPDATE SET version = excluded.version, written_by = excluded.written_by WHERE version < excluded.version`,
    ).run(SQLITE_SCHEMA_VERSION, WRITTEN_BY)
  }).immediate()
  // Tables made with IF NOT EXISTS may have been an app's already.
  for (const [name, expected] of [
    [`${table}_lease`, 'attempt,expires_at,key,token'],
    [`${table}_now`, 'expires_at,key'],
    [`${table}_gen`, 'expires_max,hashes,id,records,uid'],
  ]) {
    if (columnsOf(db, name as string) !== expected) {
      throw new DedupStoreError('misconfigured', `${PACKAGE} table ${name} exists but is not the store's; pick another table name.`)
    }
  }
}

/** A table's column names, sorted and joined by commas ('' when there is no such table). */
function columnsOf(db: Database, name: string): string {
  return (db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(name) as string[]).sort().join(',')
}

function prepare(db: Database, table: string): Statements {
  const lease = `${table}_lease`
  return {
    findDone: db.prepare(`SELECT expires_at FROM ${table}_now WHERE key = ?`).pluck(),
    // The batch's transaction holds the write lock, so these decide ownership of a lease
    // atomically. No RETURNING: SQLite fills a temporary table for it on every run (a pager opened
    // and closed per claim: 8 % of the instructions of receiving an event into SQLite, callgrind).
    newLease: db.prepare(`INSERT INTO ${lease} (key, token, attempt, expires_at) VALUES (?, ?, 1, ?) ON CONFLICT (key) DO NOTHING`),
    retakeLease: db.prepare(
      `UPDATE ${lease} SET attempt = attempt + 1, token = ?, expires_at = ? WHERE key = ? AND (token IS NULL OR expires_at <= ?)`,
    ),
    findAttempt: db.prepare(`SELECT attempt FROM ${lease} WHERE key = ?`).pluck(),
    findLease: db.prepare(`SELECT expires_at FROM ${lease} WHERE key = ?`).pluck(),
    endLease: db.prepare(`DELETE FROM ${lease} WHERE key = ? AND token = ?`),
    markDone: db.prepare(
      `INSERT INTO ${table}_now (key, expires_at) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at`,
    ),
    releaseLease: db.prepare(`UPDATE ${lease} SET token = NULL, expires_at = ? WHERE key = ? AND token = ?`),
    findHeldLease: db.prepare(`SELECT expires_at FROM ${lease} WHERE key = ? AND token IS NOT NULL`).pluck(),
    extendLease: db.prepare(`UPDATE ${lease} SET expires_at = ? WHERE key = ? AND token = ? AND expires_at > ?`),
    ...prepareWalk(db, `${table}_now`),
    leases: prepareWalk(db, lease),
    marks: prepareMarks(db, table),
  }
}
