/**
 * Every failure of the SQLite store as a `DedupStoreError` with a stable `code` and a message
 * that says what to do. The receiver turns any of them into a 503 `store_unavailable`.
 */
// The class comes from the package face, not from '../errors.js': this file is bundled into the
// separate `sqlite` entry, and a relative import would give that bundle its own copy of the
// class, so `error instanceof DedupStoreError` (imported by users from '@email-webhooks/core')
// would be false. postgres.ts and driver.ts do the same. It is only used inside functions, so the
// import cycle index → default store → sqlite → index is harmless.
import { accessSync, closeSync, constants, existsSync, openSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { DedupStoreError } from '@email-webhooks/core'

export const PACKAGE: string = '[@email-webhooks/core/sqlite]'

/** The store was closed; a new one must be opened. */
export function closedError(): DedupStoreError {
  return new DedupStoreError('closed', `${PACKAGE} this SqliteDedupStore was closed; open a new one to go on.`)
}

/** Constructor options the store cannot use. */
export function invalidOption(message: string): DedupStoreError {
  return new DedupStoreError('invalid_options', `${PACKAGE} ${message}`)
}

/** The WAL could not be synced: nothing committed since the last good sync is known to be on disk. */
export function syncError(path: string, cause: NodeJS.ErrnoException): DedupStoreError {
  return new DedupStoreError(
    'command_failed',
    `${PACKAGE} the write-ahead log of ${path} could not be synced to disk (fdatasync: ${cause.code ?? cause.message}). The store refuses all further work until it is reopened, since what it wrote may not be on disk; the events are retried by the sender. Check the disk (space, I/O errors in the kernel log), then restart the process.`,
    { cause },
  )
}

/** close() waited `ms` for the disk (a sync, the checkpoint thread) and gave up, leaving the file open. */
export function closeTimeoutError(path: string, ms: number): DedupStoreError {
  return new DedupStoreError(
    'timeout',
    `${PACKAGE} close() of the store on ${path} waited ${ms} ms (closeTimeoutMs) for the disk (a sync of the write-ahead log or of the file) and gave up. The store is closed; what waited for that sync was not acknowledged and fails with this error, so the sender retries those events; the file stays open until the process ends, as a crash would leave it, and is recovered when next opened. The stuck sync keeps the process from exiting, process.exit() included (Node waits for its thread): log this, then end the process with SIGKILL (process.kill(process.pid, 'SIGKILL')) or let your supervisor do it. Check the disk (I/O errors or hung tasks in the kernel log, a stalled network volume); raise closeTimeoutMs only if this disk's syncs take that long.`,
  )
}

/**
 * What the warning says when the disk answers a wait that close() gave up on (closeTimeoutMs): how
 * long it took and, for a sync of the WAL, whether it failed, so that an operator tells a slow disk
 * from a dead one. When only the checkpoint thread was still waited for, its sync of the database
 * file reports nothing to close(): the warning says so rather than guess.
 */
export function lateDiskWarning(
  path: string,
  limitMs: number,
  tookMs: number,
  answer: { failure: DedupStoreError | undefined } | 'thread',
): string {
  const took = `${(tookMs / 1000).toFixed(1)} s`
  const gaveUp = `that close() gave up on after ${limitMs} ms (closeTimeoutMs), ${took} after close() began waiting`
  const notAcknowledged =
    'the events that waited for it were not acknowledged, and the sender retries them (those recorded answer as duplicates)'
  if (answer === 'thread')
    return `${PACKAGE} the checkpoint thread of ${path} ended ${gaveUp}. It was copying the write-ahead log into the file and syncing it; whether that sync failed is not reported to close(), so check the disk (I/O errors in the kernel log) before the process starts again on it; ${notAcknowledged}.`
  const head = `${PACKAGE} the disk answered the sync of ${path} ${gaveUp}`
  if (answer.failure) {
    const cause = answer.failure.cause as NodeJS.ErrnoException | undefined
    return `${head}, with an error (fdatasync: ${cause?.code ?? cause?.message ?? 'failed'}): the disk failed it, and what waited for it was rightly not acknowledged (the sender retries those events). Check the disk (I/O errors in the kernel log) before the process starts again on it.`
  }
  return `${head}, without an error: the disk was slow, not failed; ${notAcknowledged}. If this disk's syncs take that long, raise closeTimeoutMs above ${took}.`
}

/** The database file could not be synced while the WAL was copied into it: the WAL still holds every page, and must not start over. */
export function fileSyncError(path: string, reason: string): DedupStoreError {
  return new DedupStoreError(
    'command_failed',
    `${PACKAGE} ${path} could not be synced to disk while its write-ahead log was copied into it (${reason}). The store refuses all further work until it is reopened: the log still holds every page, and stops being copied, so nothing recorded is lost if the process restarts on a working disk; the events are retried by the sender. Check the disk (space, I/O errors in the kernel log), then restart the process.`,
  )
}

/** A statement failed (lock held too long, disk full, I/O error, corruption). */
export function commandError(path: string, cause: unknown): DedupStoreError {
  if (cause instanceof DedupStoreError) return cause
  const code = (cause as { code?: unknown } | null)?.code
  const text = cause instanceof Error ? cause.message : String(cause)
  const hint =
    code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED'
      ? 'another process held the database lock longer than busyTimeoutMs; raise busyTimeoutMs, or let fewer processes write to this file'
      : code === 'SQLITE_FULL'
        ? 'the disk is full; free space'
        : code === 'SQLITE_READONLY' || code === 'SQLITE_READONLY_DBMOVED'
          ? 'the file is read-only or was moved; make it writable by this process'
          : code === 'SQLITE_CORRUPT' || code === 'SQLITE_NOTADB'
            ? 'the file is corrupt; restore it from a backup or move it away (its events will be handled again)'
            : 'see the cause; the event will be retried by the sender'
  return new DedupStoreError('command_failed', `${PACKAGE} SQLite failed on ${path} (${String(code ?? 'error')}: ${text}): ${hint}.`, {
    cause,
  })
}

/** The file could not be opened or is not a usable database; the message names the path and the OS error. */
export function openError(path: string, cause: unknown): DedupStoreError {
  if (cause instanceof DedupStoreError) return cause
  const code = (cause as { code?: unknown } | null)?.code
  const text = cause instanceof Error ? cause.message : String(cause)
  if (/Could not locate the bindings file/.test(text)) {
    // better-sqlite3 loads its native module on the first `new Database()`: installed without
    // running its build (npm i --ignore-scripts, or npm's install-script policy), it has none.
    return new DedupStoreError(
      'driver_missing',
      `${PACKAGE} better-sqlite3 is installed, but its native module was never built: its install script did not run (npm install --ignore-scripts, or npm's install-script policy, which from npm 12 runs no dependency's script unless allowed). Fix: allow it, \`npm approve-scripts better-sqlite3\` (npm 11.16 and later; with pnpm, allowBuilds in pnpm-workspace.yaml or \`pnpm approve-builds\`), then \`npm rebuild better-sqlite3\` (it downloads a prebuilt binary, or compiles with python3, make and a C++ compiler).`,
      { cause },
    )
  }
  if (code === 'ERR_DLOPEN_FAILED' || /NODE_MODULE_VERSION/.test(text)) {
    // better-sqlite3 loads its native module on the first `new Database()`: a build for another
    // Node.js version fails here, not at require time. Not a problem of the file.
    return new DedupStoreError(
      'driver_missing',
      `${PACKAGE} better-sqlite3 could not be loaded: its native module does not fit this Node.js (${process.version}): ${text.split('\n').join(' ')} Fix: \`npm rebuild better-sqlite3\` with this Node.js (or reinstall); on Node 24 use better-sqlite3 13.`,
      { cause },
    )
  }
  const full = path === ':memory:' ? path : resolve(path)
  const os = osError(full)
  const what =
    code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT'
      ? 'it is not a SQLite database or it is corrupt: move it away (or restore a backup) and let the store create a new one'
      : code === 'SQLITE_BUSY'
        ? 'another process held the file locked longer than busyTimeoutMs; raise busyTimeoutMs, or let fewer processes write to this file'
        : os?.startsWith('EISDIR')
          ? `it is a folder: give the path of a file, such as ${join(full, 'dedup.db')} (EMAIL_WEBHOOKS_DB for the default store)`
          : 'check that its folder exists and that this process may create and write files there (a read-only filesystem, as in many containers, cannot hold it), or choose another path (EMAIL_WEBHOOKS_DB for the default store)'
  return new DedupStoreError(
    'misconfigured',
    `${PACKAGE} the SQLite file ${full} could not be opened (${String(code ?? 'error')}: ${text}${os ? `; ${os}` : ''}): ${what}.`,
    { cause },
  )
}

/** The operating system's reason why `path` cannot be written, when one can be found without creating anything. */
function osError(path: string): string | undefined {
  if (path === ':memory:') return undefined
  try {
    if (existsSync(path)) {
      closeSync(openSync(path, 'r+'))
      return undefined
    }
    const parent = dirname(path)
    if (!statSync(parent).isDirectory()) return `ENOTDIR: ${parent} is not a folder`
    accessSync(parent, constants.W_OK)
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}

/** An error's code or message, for a warning (never a path's contents or data). */
export function reasonOf(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return typeof code === 'string' ? `${code}${typeof message === 'string' ? ` (${message.split('\n')[0]})` : ''}` : String(message ?? error)
}
