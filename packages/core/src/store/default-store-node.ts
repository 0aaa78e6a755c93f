/**
 * Default dedup store on Node: a SQLite file at `EMAIL_WEBHOOKS_DB`, else
 * `./.email-webhooks/dedup.db` (folder created), opened synchronously when a receiver is built.
 * One store per path is shared by every receiver in the process. If the file cannot be opened,
 * or better-sqlite3 cannot load, that is a `DedupStoreError` thrown at construction, naming the
 * path, the OS error and the fix: never a silent fall back to a memory store.
 */
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import type { DedupStoreError } from './errors.js'
import type { DedupStore } from './types.js'

/**
 * The receiver passes its own `DedupStoreError`: this module is a separate bundle (chosen by the
 * `#default-store` import condition), and a copy of the class bundled here would fail the user's
 * `error instanceof DedupStoreError`.
 */
type ErrorClass = typeof DedupStoreError

/** Where the default SQLite file lives when `EMAIL_WEBHOOKS_DB` is not set. */
const DEFAULT_DB_PATH = './.email-webhooks/dedup.db'

const stores = new Map<string, DedupStore>()

/** The error's message with its OS/SQLite code, and its cause's (the driver's) when it has one. */
function causeText(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  const text = typeof code === 'string' && !error.message.includes(code) ? `${code}: ${error.message}` : error.message
  return error.cause instanceof Error ? `${text} (${error.cause.message.split('\n')[0]})` : text
}

function openError(DedupStoreError: ErrorClass, path: string, error: unknown): InstanceType<ErrorClass> {
  const why = causeText(error)
  if ((error as { code?: unknown } | null)?.code === 'driver_missing' && error instanceof Error && /never built/.test(error.message)) {
    // The driver's own message says what happened and the fix: not "install it" a second time.
    return new DedupStoreError(
      'driver_missing',
      `[@email-webhooks/core] No store was given, and the default durable store (SQLite at ${path}) cannot load better-sqlite3. ${error.message.replace(/^\[[^\]]+\] /, '')} Or pass a store (options.store), or store: 'memory' to accept non-durable dedup.`,
      { cause: error },
    )
  }
  if ((error as { code?: unknown } | null)?.code === 'driver_missing') {
    return new DedupStoreError(
      'driver_missing',
      `[@email-webhooks/core] No store was given, and the default durable store (SQLite at ${path}) needs better-sqlite3, which could not be loaded. Install it: \`npm install better-sqlite3\` (then \`npm rebuild better-sqlite3\` if its native build failed). Or pass a store (options.store), or store: 'memory' to accept non-durable dedup. Cause: ${why}`,
      { cause: error },
    )
  }
  const sqliteSaid = SQLITE_OPEN_ERROR.exec(error instanceof Error ? error.message : '')?.[1]
  if ((error as { code?: unknown } | null)?.code === 'misconfigured' && sqliteSaid !== undefined) {
    // The SQLite store's message names the file, the OS error and what to do: said once, not wrapped
    // in a second piece of advice; its cause (the driver's error) is this error's cause.
    return new DedupStoreError(
      'misconfigured',
      `[@email-webhooks/core] No store was given, and the default durable store's SQLite file ${sqliteSaid} Or ${sqliteSaid.includes('EMAIL_WEBHOOKS_DB') ? '' : 'set EMAIL_WEBHOOKS_DB to another file, or '}pass a store (options.store), or store: 'memory' to accept non-durable dedup.`,
      { cause: (error as Error).cause ?? error },
    )
  }
  return new DedupStoreError(
    'misconfigured',
    `[@email-webhooks/core] No store was given, and the default durable store could not open its SQLite file at ${path}: ${why}. Fix: make that folder writable by this process (and the file, if it exists, a valid SQLite database), or set EMAIL_WEBHOOKS_DB to a writable path, or pass a store (options.store), or store: 'memory' to accept non-durable dedup.`,
    { cause: error },
  )
}

/** The SQLite store's own open error: `[…/sqlite] the SQLite file <path> could not be opened (…): <what to do>.` */
const SQLITE_OPEN_ERROR = /^\[@email-webhooks\/core\/sqlite\] the SQLite file (.+ could not be opened \(.*\): .+\.)$/s

/**
 * Creates the folder of `path`. `mkdir -p` on a read-only or unwritable parent reports ENOENT for
 * the folder it could not make ("no such file or directory"), which reads as "folder missing":
 * the nearest existing parent is asked instead, for the real cause (EROFS, EACCES).
 */
function makeFolder(DedupStoreError: ErrorClass, path: string, fromEnv: boolean): void {
  const folder = dirname(path)
  try {
    mkdirSync(folder, { recursive: true })
    return
  } catch (error) {
    let parent = folder
    while (!existsSync(parent) && dirname(parent) !== parent) parent = dirname(parent)
    let cause: unknown = error
    try {
      accessSync(parent, constants.W_OK)
    } catch (denied) {
      cause = denied
    }
    const code = (cause as { code?: unknown }).code
    const where = fromEnv ? `EMAIL_WEBHOOKS_DB (${path})` : `${DEFAULT_DB_PATH} in the working folder ${process.cwd()}`
    const why =
      code === 'EROFS'
        ? `${parent} is on a read-only file system (EROFS)`
        : code === 'EACCES' || code === 'EPERM'
          ? `this process may not write to ${parent} (${code}: permission denied)`
          : causeText(cause)
    throw new DedupStoreError(
      'misconfigured',
      `[@email-webhooks/core] No store was given, and the default durable store cannot create its SQLite file at ${where}: ${why}. Set EMAIL_WEBHOOKS_DB to a file on a writable, persistent volume (in a container: a mounted volume; the working folder is often read-only), or pass a store (options.store), or store: 'memory' to accept non-durable dedup.`,
      { cause },
    )
  }
}

/**
 * Opens (or reuses) the default store for this runtime, and says once which file it uses.
 * @param errorClass The `DedupStoreError` class of the calling bundle.
 * @param _createMemoryStore Unused on Node (the web variant's fallback; Node never falls back).
 * @param logger The receiver's logger: its `info` (when it has one) learns the file's path when the store is opened.
 * @throws {DedupStoreError} `misconfigured` when the file cannot be opened, `driver_missing` when better-sqlite3 cannot load.
 */
export function getDefaultStore(
  errorClass: ErrorClass,
  _createMemoryStore?: () => DedupStore,
  logger?: { info?: (message: string) => void },
): DedupStore {
  const fromEnv = Boolean(process.env.EMAIL_WEBHOOKS_DB)
  const path = resolve(process.env.EMAIL_WEBHOOKS_DB || DEFAULT_DB_PATH)
  let store = stores.get(path)
  if (!store) {
    // New or not: a first start from another folder shows at once as a new, empty file.
    const existed = existsSync(path)
    makeFolder(errorClass, path, fromEnv)
    try {
      store = new SqliteDedupStore({ path })
    } catch (error) {
      throw openError(errorClass, path, error)
    }
    stores.set(path, store)
    const file = existed ? `the SQLite file ${path}` : `a new, empty SQLite file ${path} (created now: no event handled before is known)`
    logger?.info?.(
      fromEnv
        ? `[@email-webhooks/core] dedup store: ${file} (from EMAIL_WEBHOOKS_DB).`
        : `[@email-webhooks/core] dedup store: ${file} (${DEFAULT_DB_PATH} in the working folder, as EMAIL_WEBHOOKS_DB is not set): start the app from this folder, or set EMAIL_WEBHOOKS_DB, so that a restart keeps the events it handled.`,
    )
  }
  return store
}
