/**
 * The dedup store `endpoint recover` consults to skip events the receiver already handled: the
 * receiver's SQLite file opened read-only (it must exist: a mistyped path is an error, never a new
 * empty file beside a running receiver), or its shared PostgreSQL or Redis store, only ever asked
 * `lookup`. Without any, recover says that no store was consulted. Connection URLs are shown
 * without their credentials.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { DedupStore } from '@email-webhooks/core'
import { plainMessage, UsageError } from './errors.js'

/** The receiver's SQLite file when set (core's default store reads it too). */
export const DB_ENV = 'EMAIL_WEBHOOKS_DB'
/** Where core's default store keeps its file when `EMAIL_WEBHOOKS_DB` is not set, relative to the receiver's working folder. */
export const DEFAULT_DB_PATH = './.email-webhooks/dedup.db'

/** The store recover consults, and how to name it to the user. */
export interface RecoveryStore {
  store: DedupStore | undefined
  /** For the text output: which store was consulted, or why none was. */
  description: string
  /** For `--json`: what was consulted, without credentials; null when nothing was. */
  consulted: { kind: 'sqlite' | 'postgres' | 'redis'; location: string } | null
}

/** Where the store options came from. */
export interface RecoveryStoreOptions {
  /** `--db <path>`. */
  db?: string | undefined
  /** `--store <url>`. */
  store?: string | undefined
}

async function openSqlite(path: string, source: string): Promise<RecoveryStore> {
  const location = resolve(path)
  try {
    const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')
    const store = new SqliteDedupStore({ path, readOnly: true })
    return { store, description: `SQLite file ${location} (read-only, from ${source})`, consulted: { kind: 'sqlite', location } }
  } catch (error) {
    throw new UsageError(`Cannot consult the dedup file ${location} (from ${source}): ${plainMessage(error)}`)
  }
}

/** `host:port/path` of a connection URL: never its user name or password. */
function where(url: URL): string {
  return `${url.host}${url.pathname === '/' ? '' : url.pathname}`
}

/** A shared store opened from its URL, and how to name it without credentials. */
export interface SharedStore {
  store: DedupStore
  kind: 'postgres' | 'redis'
  /** `host:port/path`, without credentials. */
  location: string
  /** `PostgreSQL at host:port/db` or `Redis at host:port/0`. */
  description: string
}

/**
 * Opens the PostgreSQL or Redis store of a connection URL: without creating tables (a missing
 * table is an error) and without Redis's durability check (tooling beside a receiver that made them).
 * @param raw The URL, with its credentials.
 * @param option The option it came from, for messages.
 * @throws {UsageError} when it is not a postgres://, postgresql://, redis:// or rediss:// URL, or the store refuses it.
 * @example
 * const { store, description } = await openSharedStore(process.env.DATABASE_URL, '--store')
 */
export async function openSharedStore(raw: string, option: string): Promise<SharedStore> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new UsageError(`${option} is not a URL: give postgres://user:password@host:5432/db or redis://:password@host:6379/0.`)
  }
  const location = where(url)
  try {
    if (url.protocol === 'postgres:' || url.protocol === 'postgresql:') {
      const { PostgresDedupStore } = await import('@email-webhooks/core/postgres')
      const store = new PostgresDedupStore({ connectionString: raw, createTable: false })
      return { store, kind: 'postgres', location, description: `PostgreSQL at ${location}` }
    }
    if (url.protocol === 'redis:' || url.protocol === 'rediss:') {
      const { RedisDedupStore } = await import('@email-webhooks/core/redis')
      const store = new RedisDedupStore({ url: raw, checkDurability: false })
      return { store, kind: 'redis', location, description: `Redis at ${location}` }
    }
  } catch (error) {
    throw new UsageError(`Cannot open the dedup store at ${location} (${option}): ${plainMessage(error)}`)
  }
  throw new UsageError(`${option} takes a postgres://, postgresql://, redis:// or rediss:// URL (got ${url.protocol}//…).`)
}

async function openShared(raw: string): Promise<RecoveryStore> {
  // recover only reads: no table is created, no durability checked.
  const { store, kind, location, description } = await openSharedStore(raw, '--store')
  return { store, description, consulted: { kind, location } }
}

/**
 * Opens the store recover consults: `--store`, else `--db`, else `EMAIL_WEBHOOKS_DB`, else the
 * default file when it exists in the working folder; none otherwise.
 * @param options `--db` and `--store`.
 * @param env Where `EMAIL_WEBHOOKS_DB` is read; default `process.env`.
 * @throws {UsageError} when both are given, the file does not exist or is not a dedup file, or the URL is not usable.
 * @example
 * const { store, description } = await openRecoveryStore({ db: './.email-webhooks/dedup.db' })
 */
export async function openRecoveryStore(options: RecoveryStoreOptions, env: NodeJS.ProcessEnv = process.env): Promise<RecoveryStore> {
  if (options.db !== undefined && options.store !== undefined)
    throw new UsageError('Give --db (a SQLite file) or --store (a PostgreSQL or Redis URL), not both.')
  if (options.store !== undefined) return openShared(options.store)
  if (options.db !== undefined) return openSqlite(options.db, '--db')
  const fromEnv = env[DB_ENV]
  if (fromEnv) return openSqlite(fromEnv, DB_ENV)
  const fallback = resolve(DEFAULT_DB_PATH)
  if (existsSync(fallback)) return openSqlite(fallback, `the default path ${DEFAULT_DB_PATH}`)
  return {
    store: undefined,
    description: `no --db or --store, ${DB_ENV} unset, and no file at ${fallback}: events the receiver already handled are retried too (it answers them as duplicates)`,
    consulted: null,
  }
}
