/**
 * The console's reads of a SQLite store, on a thread of their own (console.ts). better-sqlite3 is
 * synchronous, and the console is mounted in the receiver's app: on the store's own connection an
 * overview that counts a week of done records (12 million at 20 events a second) would keep the
 * receiver's event loop, and every webhook answer of the process, waiting for seconds. The thread
 * opens the file read-only (WAL: it reads beside the writing connection and never blocks it); each
 * `read` runs its statements in one read transaction there, so a page is one snapshot.
 *
 * Started on the first read, not with the store (most stores never serve a console); unreferenced
 * while no read waits, so it never keeps a process alive. If it cannot start or fails, the reads
 * go back to the store's connection, and the store says why once (its `warn` option).
 */
import { Worker } from 'node:worker_threads'
import { reasonOf } from './errors.js'
import type { Database, Statement } from './types.js'

/** One statement of a read: its SQL, the arguments of `all()`, and whether rows are single values (`pluck`). */
export interface ReadStep {
  sql: string
  args: unknown[]
  pluck?: boolean
}

/** What the reader needs of its store. */
export interface ReaderHost {
  /** The file, resolved (the thread opens it later; the process may change directory meanwhile). */
  path: string
  /** better-sqlite3's file for the thread to load (the one this process loaded). */
  driver: () => string
  busyTimeoutMs: number
  /** The thread could not start or failed: the reads run on the store's connection from now on. */
  stopped: (reason: string) => void
}

/** A failed statement as the thread sends it back: better-sqlite3's code and message. */
interface ReadFailure {
  code?: string
  message: string
}

/** A read the thread could not answer because it ended (it could not start, failed, or was closed): read elsewhere. */
export class ReaderEndedError extends Error {
  override readonly name = 'ReaderEndedError'
}

type Answer = { id: number; rows: unknown[][] } | { id: number; error: ReadFailure }

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
// The lowest CPU priority for this thread alone (Linux: a thread's id is its own to set): on a busy
// core the receiver's thread runs first, and pages are made with the time it leaves.
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop())
  if (Number.isInteger(tid) && tid > 0) require('node:os').setPriority(tid, 19)
} catch {}
const Database = require(workerData.driver)
const db = new Database(workerData.path, { readonly: true, fileMustExist: true, timeout: workerData.busyTimeoutMs })
const prepared = new Map()
const statement = (sql, pluck) => {
  const name = (pluck ? 'p:' : 'r:') + sql
  let found = prepared.get(name)
  if (found === undefined) {
    found = db.prepare(sql)
    if (pluck) found.pluck()
    prepared.set(name, found)
  }
  return found
}
const readAll = db.transaction((steps) => steps.map((step) => statement(step.sql, step.pluck).all(...step.args)))
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close()
    parentPort.close()
    return
  }
  try {
    parentPort.postMessage({ id: message.id, rows: readAll(message.steps) })
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: { code: typeof error.code === 'string' ? error.code : undefined, message: String(error.message) } })
  }
})
`

/** Runs read-only statements of one store's file in a worker thread. */
export class SqliteReader {
  readonly #host: ReaderHost
  #worker: Worker | undefined
  #exited: Promise<void> | undefined
  #nextId = 0
  readonly #waiting = new Map<number, { resolve: (rows: unknown[][]) => void; reject: (error: Error) => void }>()
  /** Closed, or the thread failed: `read` answers undefined (the caller reads on the store's connection). */
  #stopped = false

  constructor(host: ReaderHost) {
    this.#host = host
  }

  /** Whether the thread runs (tests read it). */
  get running(): boolean {
    return this.#worker !== undefined && !this.#stopped
  }

  /**
   * The rows of each step, read in one transaction on the thread; undefined when there is no thread
   * (it could not start, failed, or the reader is closed): read on the store's connection instead.
   * Rejects with the statement's error (an Error carrying better-sqlite3's `code`), or with a
   * `ReaderEndedError` when the thread ended before it answered (read elsewhere too).
   */
  read(steps: ReadStep[]): Promise<unknown[][]> | undefined {
    if (this.#stopped) return undefined
    const worker = this.#worker ?? this.#start()
    if (worker === undefined) return undefined
    const id = this.#nextId++
    const answer = new Promise<unknown[][]>((resolve, reject) => this.#waiting.set(id, { resolve, reject }))
    // Referenced while a read waits: a script that awaits a page keeps running until it has it.
    if (this.#waiting.size === 1) worker.ref()
    worker.postMessage({ id, steps })
    return answer
  }

  /** Ends the thread once it has finished the read it is running (its connection closes); resolves when it is gone. */
  close(): Promise<void> {
    if (!this.#stopped) {
      this.#stopped = true
      // Referenced again: the process must live until the thread has closed its connection.
      this.#worker?.ref()
      this.#worker?.postMessage('close')
    }
    return this.#exited ?? Promise.resolve()
  }

  #start(): Worker | undefined {
    let worker: Worker
    try {
      worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { driver: this.#host.driver(), path: this.#host.path, busyTimeoutMs: this.#host.busyTimeoutMs },
      })
    } catch (error) {
      this.#fail(`the thread could not start: ${reasonOf(error)}`)
      return undefined
    }
    worker.unref()
    this.#worker = worker
    this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()))
    worker.on('message', (answer: Answer) => this.#answered(answer))
    worker.on('error', (error) => this.#fail(`the thread failed: ${reasonOf(error)}`))
    worker.once('exit', (code) => this.#fail(`the thread exited with code ${code}`))
    return worker
  }

  #answered(answer: Answer): void {
    const waiting = this.#waiting.get(answer.id)
    if (waiting === undefined) return
    this.#waiting.delete(answer.id)
    if (this.#waiting.size === 0) this.#worker?.unref()
    if ('rows' in answer) waiting.resolve(answer.rows)
    else waiting.reject(Object.assign(new Error(answer.error.message), { code: answer.error.code }))
  }

  /** The thread is gone: reads waiting for it fail, later ones go to the store's connection; said once unless the reader was closed. */
  #fail(reason: string): void {
    const closing = this.#stopped
    this.#stopped = true
    for (const { reject } of this.#waiting.values())
      reject(new ReaderEndedError(`the console's reading thread ended before it answered (${reason})`))
    this.#waiting.clear()
    void this.#worker?.terminate()
    if (!closing) this.#host.stopped(reason)
  }
}

/**
 * Runs steps on `db` itself, in one read transaction, with statements prepared once: the reads of
 * a store without a reading thread (in memory), or once its thread is gone.
 * @param db The store's connection.
 * @example
 * const here = readerHere(db)
 * const [rows] = here([{ sql: 'SELECT 1', args: [] }])
 */
export function readerHere(db: Database): (steps: ReadStep[]) => unknown[][] {
  const prepared = new Map<string, Statement>()
  const statement = (sql: string, pluck: boolean): Statement => {
    const name = `${pluck ? 'p' : 'r'}:${sql}`
    let found = prepared.get(name)
    if (found === undefined) {
      found = db.prepare(sql)
      if (pluck) found.pluck()
      prepared.set(name, found)
    }
    return found
  }
  return db.transaction((steps: ReadStep[]) => steps.map((step) => statement(step.sql, step.pluck === true).all(...step.args)))
}

/**
 * The rows of each step: read on the thread when the store has one, else (or when it ended before
 * it answered, and the store still works) by `here`. Rejects with the statement's error, or with
 * the store's refusal.
 * @param reader The store's reading thread, if any.
 * @param steps The statements of one read (one snapshot).
 * @param here The same read on the store's connection (`readerHere`).
 * @param refused Why the store refuses work now, or undefined.
 * @example
 * const [rows] = await readOffLoop(reader, [{ sql, args: [now] }], here, () => undefined)
 */
export async function readOffLoop(
  reader: SqliteReader | undefined,
  steps: ReadStep[],
  here: (steps: ReadStep[]) => unknown[][],
  refused: () => Error | undefined,
): Promise<unknown[][]> {
  const onThread = reader?.read(steps)
  if (onThread === undefined) return here(steps)
  try {
    return await onThread
  } catch (error) {
    if (!(error instanceof ReaderEndedError)) throw error
    const why = refused()
    if (why) throw why
    return here(steps)
  }
}
