/**
 * Group commit's disk half: `fdatasync` of the WAL file on libuv's thread pool, one at a time.
 * Whoever needs durability for what is already committed asks to be called after the next sync
 * that starts after the ask; all asks that arrive while a sync runs share the following one, so
 * a busy store pays one sync per round, not one per batch. After a failed sync every later ask
 * fails too: what was written since the last good sync may not be on disk.
 */
import { closeSync, fdatasync, openSync, realpathSync } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import type { DedupStoreError } from '@email-webhooks/core'
import { syncError } from './errors.js'

/** Called once the data committed before the ask is on disk, or with the reason it may not be. */
export type Synced = (error?: DedupStoreError) => void

/** Whether `path` names a file on disk: not an in-memory database (`:memory:`, `''`) nor a `file:` URI. */
export function isFilePath(path: string): boolean {
  return path !== ':memory:' && path !== '' && !path.startsWith('file:')
}

/**
 * One sync of the WAL file `wal` on libuv's thread pool: resolves once the disk answered it, with
 * the sync's error if it failed (for a warning when close() gave up on it before), or with nothing
 * at once if the file cannot be opened (that, and a failed sync, are for the checkpoint after it to meet). close()
 * runs it, under its limit, before its checkpoint, which syncs on the event loop: a disk that stopped
 * answering while nothing was being synced is found here, not by a checkpoint that never returns.
 * The WAL, not the database file: SQLite locks the database file, and closing any descriptor of it
 * would drop the process's locks.
 */
export async function probeSync(wal: string): Promise<DedupStoreError | undefined> {
  let handle: FileHandle
  try {
    handle = await open(wal, 'r')
  } catch {
    return undefined // Nothing to probe (no WAL): the checkpoint meets what is wrong.
  }
  try {
    await handle.datasync()
    return undefined
  } catch (error) {
    return syncError(wal.slice(0, -'-wal'.length), error as NodeJS.ErrnoException)
  } finally {
    await handle.close().catch(() => {})
  }
}

/** The WAL file of one store and the syncs of it that run or wait. */
export class WalSync {
  readonly #fd: number
  readonly #path: string
  #running = false
  /** Asks for the next sync. */
  #next: Synced[] = []
  #failure: DedupStoreError | undefined
  /** Called when no sync runs any more, with the error of the one that just ended, if it failed. */
  #idle: ((ended: DedupStoreError | undefined) => void)[] = []
  /** The asks the running sync will answer. */
  #round: Synced[] = []

  private constructor(fd: number, path: string) {
    this.#fd = fd
    this.#path = path
  }

  /**
   * The WAL SQLite keeps next to the (symlink-resolved) database, or undefined when it has none
   * (in-memory and URI databases, or a filesystem where SQLite could not turn WAL on): then each
   * batch commits with synchronous = FULL instead. Any other failure to open it is thrown.
   */
  static open(path: string): WalSync | undefined {
    if (!isFilePath(path)) return undefined
    const real = realpathSync(path)
    try {
      return new WalSync(openSync(`${real}-wal`, 'r+'), real)
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return undefined
      throw error
    }
  }

  /** The error of the failed sync, once one failed. */
  get failure(): DedupStoreError | undefined {
    return this.#failure
  }

  /** Calls `done` after a sync that started after this call (at once with the error if one failed before). */
  after(done: Synced): void {
    if (this.#failure) {
      done(this.#failure)
      return
    }
    this.#next.push(done)
    if (!this.#running) this.#start()
  }

  /** Resolves when no sync is running: with the error of the sync that was running, if it failed. */
  idle(): Promise<DedupStoreError | undefined> {
    return this.#running ? new Promise((resolve) => this.#idle.push(resolve)) : Promise.resolve(undefined)
  }

  close(): void {
    closeSync(this.#fd)
  }

  /**
   * Gives up on the sync that runs and the asks that wait (close() past its limit): each is called
   * with `error` now, and later asks at once; the sync's own end, if it ever comes, calls no one.
   */
  abandon(error: DedupStoreError): void {
    this.#failure ??= error
    const waiting = [...this.#round, ...this.#next]
    this.#round = []
    this.#next = []
    for (const done of waiting) done(this.#failure)
  }

  #start(): void {
    this.#round = this.#next
    this.#next = []
    this.#running = true
    fdatasync(this.#fd, (error) => {
      this.#running = false
      // After abandon() the round was answered already (and emptied), and its error is the failure.
      const round = this.#round
      this.#round = []
      const ended = error ? syncError(this.#path, error) : undefined
      this.#failure ??= ended
      const failure = this.#failure
      for (const done of round) done(failure)
      if (this.#next.length > 0) {
        if (failure) {
          const waiting = this.#next
          this.#next = []
          for (const done of waiting) done(failure)
        } else this.#start()
      }
      if (!this.#running) for (const resolve of this.#idle.splice(0)) resolve(ended)
    })
  }
}
