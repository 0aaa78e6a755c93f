/**
 * The store the `inbox` commands work on: `--store` (a SQLite file, or a postgres:// or redis://
 * URL), else `EMAIL_WEBHOOKS_DB`, else the default file when it exists in the working folder. A
 * SQLite file must exist and be a receiver's dedup file (a mistyped path is an error, never a new
 * empty file); it is opened read-write, beside the running receiver, as a second process of its
 * own. Only the store's `InboxQueue` is used, so every store with an inbox works alike.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { DedupStore, InboxQueue } from '@email-webhooks/core'
import { plainMessage, UsageError } from './errors.js'
import { DB_ENV, DEFAULT_DB_PATH, openSharedStore } from './recover-store.js'

/** The stores whose inbox the commands can use in this version (a store without one is refused, naming them). */
export const STORES_WITH_INBOX =
  "SQLite (give the receiver's file path to --store), PostgreSQL and Redis (their URL) with this version of @email-webhooks/core; the memory store has one too, but only inside the receiver's process"

/** A URL rather than a file path: a scheme followed by `//`. */
const URL_PATTERN = /^[a-z][a-z0-9+.-]*:\/\//i

/** The store has no inbox: inbox mode cannot run on it, and there is nothing to list or work. */
export class NoInboxError extends UsageError {
  override readonly name = 'NoInboxError'
  readonly code = 'no_inbox'
}

/** An opened store with an inbox, and how to name it (never with credentials). */
export interface InboxStore {
  store: DedupStore
  inbox: InboxQueue
  kind: 'sqlite' | 'postgres' | 'redis'
  /** The file's absolute path, or `host:port/path` of a URL. */
  location: string
  /** For messages: `SQLite file /app/.email-webhooks/dedup.db (from --store)`. */
  description: string
}

const KIND_NAME = { sqlite: 'SQLite', postgres: 'PostgreSQL', redis: 'Redis' } as const

async function openSqlite(path: string, source: string): Promise<{ store: DedupStore; location: string; description: string }> {
  const location = resolve(path)
  const description = `SQLite file ${location} (from ${source})`
  if (path === ':memory:' || !existsSync(location))
    throw new UsageError(
      `No SQLite file at ${location} (from ${source}): give the receiver's store file (its ${DB_ENV}, or ${DEFAULT_DB_PATH} in its working folder). The inbox commands never create one.`,
    )
  let SqliteDedupStore: typeof import('@email-webhooks/core/sqlite').SqliteDedupStore
  try {
    ;({ SqliteDedupStore } = await import('@email-webhooks/core/sqlite'))
    // Read-only first: it creates nothing, and refuses a file that is not a receiver's dedup file.
    await new SqliteDedupStore({ path, readOnly: true }).close()
    return { store: new SqliteDedupStore({ path }), location, description }
  } catch (error) {
    throw new UsageError(`Cannot open the store ${location} (from ${source}): ${plainMessage(error)}`)
  }
}

function where(option: string | undefined, env: NodeJS.ProcessEnv): { value: string; source: string } {
  if (option !== undefined) return { value: option, source: '--store' }
  const fromEnv = env[DB_ENV]
  if (fromEnv) return { value: fromEnv, source: DB_ENV }
  const fallback = resolve(DEFAULT_DB_PATH)
  if (existsSync(fallback)) return { value: fallback, source: `the default path ${DEFAULT_DB_PATH}` }
  throw new UsageError(
    `No store: pass --store with the receiver's store (its SQLite file, or a postgres:// or redis:// URL), or set ${DB_ENV}; there is no ${fallback} here either.`,
  )
}

/**
 * Opens the store named by `--store` (else `EMAIL_WEBHOOKS_DB`, else the default file) and checks that it has an inbox.
 * @param option The `--store` value, if given.
 * @param env Where `EMAIL_WEBHOOKS_DB` is read; default `process.env`.
 * @throws {NoInboxError} when the store has no inbox (it is closed first).
 * @throws {UsageError} when there is no store, the file does not exist or is not a dedup file, or the URL is not usable.
 * @example
 * const { inbox, description } = await openInboxStore('./.email-webhooks/dedup.db')
 */
export async function openInboxStore(option: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<InboxStore> {
  const { value, source } = where(option, env)
  const opened = URL_PATTERN.test(value)
    ? { ...(await openSharedStore(value, source)) }
    : { ...(await openSqlite(value, source)), kind: 'sqlite' as const }
  const description = opened.kind === 'sqlite' ? opened.description : `${opened.description} (from ${source})`
  const inbox = opened.store.inbox
  if (!inbox) {
    await opened.store.close?.()
    throw new NoInboxError(
      `The ${KIND_NAME[opened.kind]} store at ${opened.location} has no inbox in this version of @email-webhooks/core (store.inbox is undefined), so it holds no queued events to list or work. Stores with an inbox: ${STORES_WITH_INBOX}.`,
    )
  }
  return { store: opened.store, inbox, kind: opened.kind, location: opened.location, description }
}
