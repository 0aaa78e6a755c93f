/**
 * The console's reads of a SQLite store, on a thread of their own (console.ts). better-sqlite3 is
 * synchronous, and the console is mounted in the receiver's app: on the store's own connection an
 * overview that counts a week of done records (12 million at 20 events a second) would keep the
 * receiver's event loop, and every webhook answer of the process, waiting for seconds. The thread
 * opens the file read-only (WAL: it reads beside the writing connection and never locks it out);
 * each `read` runs its statements in one read transaction there, so a page is one snapshot. A
 * snapshot still keeps the WAL from starting over while it lasts: long reads go in chunks (console.ts).
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

/**
 * A word of shared memory between the reading thread and the checkpointer's (checkpoint.ts), so that
 * the WAL can start over while pages are read: a read's snapshot keeps the held pass from copying
 * the WAL's last frames. OPEN: neither; READING: a read runs; PASSING: the held pass runs. Each side
 * waits a bounded time for the other, then goes on without the gate (a slower restart, never a
 * wrong read).
 */
export const READ_GATE: Readonly<{ OPEN: 0; READING: 1; PASSING: 2; readWaitMs: number; checkpointWaitMs: number }> = Object.freeze({
  OPEN: 0,
  READING: 1,
  PASSING: 2,
  readWaitMs: 50,
  checkpointWaitMs: 20,
})

/**
 * The gate's two moves, in the source of both threads (this one's and the checkpointer's): `gate`
 * from workerData's shared word; `takeGate(mine, waitMs)` sets it from OPEN to `mine`, waiting up to
 * `waitMs` while the other side holds it, and says whether it did; `openGate(taken)` gives it back.
 */
export const GATE_SOURCE = `
const gate = workerData.gate === undefined ? undefined : new Int32Array(workerData.gate)
const takeGate = (mine, waitMs) => {
  if (gate === undefined) return false
  const until = Date.now() + waitMs
  for (;;) {
    const seen = Atomics.compareExchange(gate, 0, workerData.READ_GATE.OPEN, mine)
    if (seen === workerData.READ_GATE.OPEN) return true
    const left = until - Date.now()
    if (seen === mine || left <= 0) return false
    Atomics.wait(gate, 0, seen, left)
  }
}
const openGate = (taken) => {
  if (!taken) return
  Atomics.store(gate, 0, workerData.READ_GATE.OPEN)
  Atomics.notify(gate, 0)
}
`

/** What the reader needs of its store. */
export interface ReaderHost {
  /** The file, resolved (the thread opens it later; the process may change directory meanwhile). */
  path: string
  /** better-sqlite3's file for the thread to load (the one this process loaded). */
  driver: () => string
  busyTimeoutMs: number
  /** The thread could not start or failed: the reads run on the store's connection from now on. */
  stopped: (reason: string) => void
  /** The word shared with the checkpointer's thread (READ_GATE), when the store has one. */
  gate?: SharedArrayBuffer | undefined
  /** How long a read waits for the checkpointer's held pass (tests widen it); READ_GATE.readWaitMs by default. */
  gateWaitMs?: number | undefined
}

/** A failed statement as the thread sends it back: better-sqlite3's code and message. */
interface ReadFailure {
  code?: string
  message: string
}

/**
 * The Node flags a worker thread of the store runs with: the process's, but `--input-type` (a
 * thread's source is given as a string, which `--input-type=module` would make an ES module, where
 * its `require` does not exist: a script run as `node --input-type=module -e …` lost both threads).
 * @example
 * new Worker(source, { eval: true, execArgv: workerExecArgv() })
 */
export function workerExecArgv(): string[] {
  const argv: string[] = []
  for (let i = 0; i < process.execArgv.length; i++) {
    const arg = process.execArgv[i] as string
    if (arg === '--input-type') i++
    else if (!arg.startsWith('--input-type=')) argv.push(arg)
  }
  return argv
}

/** A read the thread could not answer because it ended (it could not start, failed, or was closed): read elsewhere. */
export class ReaderEndedError extends Error {
  override readonly name = 'ReaderEndedError'
}

type Answer = { id: number; rows: unknown[][] } | { id: number; error: ReadFailure }

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
// A lower CPU priority for this thread alone (Linux: a thread's id is its own to set): on a busy
// core the receiver's thread runs first. Nice 10, not 19: at 19 a page got about 1.5 % of a busy
// core and timed out (storeTimeoutMs) on a loaded host; at 10 it gets about a tenth.
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop())
  if (Number.isInteger(tid) && tid > 0) require('node:os').setPriority(tid, 10)
} catch {}
const Database = require(workerData.driver)
const db = new Database(workerData.path, { readonly: true, fileMustExist: true, timeout: workerData.busyTimeoutMs })
// readerHere's reads, written again: this source must stand alone in the thread.
const prepared = new Map()
const statement = (sql) => {
  let found = prepared.get(sql)
  if (found === undefined) {
    // Kept small: the overview's statements name each generation's table, and ids only grow.
    if (prepared.size >= 256) prepared.clear()
    found = db.prepare(sql)
    prepared.set(sql, found)
  }
  return found
}
const readAll = db.transaction((steps) => steps.map((step) => statement(step.sql).pluck(step.pluck === true).all(...step.args)))
${GATE_SOURCE}
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close()
    parentPort.close()
    return
  }
  // READ_GATE: a read waits (a bounded time) for the checkpointer's held pass, and keeps it waiting.
  const entered = takeGate(workerData.READ_GATE.READING, workerData.gateWaitMs)
  try {
    const rows = readAll(message.steps)
    openGate(entered)
    parentPort.postMessage({ id: message.id, rows })
  } catch (error) {
    openGate(entered)
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
        execArgv: workerExecArgv(),
        workerData: {
          driver: this.#host.driver(),
          path: this.#host.path,
          busyTimeoutMs: this.#host.busyTimeoutMs,
          gate: this.#host.gate,
          READ_GATE,
          gateWaitMs: this.#host.gateWaitMs ?? READ_GATE.readWaitMs,
        },
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
    // Not while closing: close() keeps the thread referenced until its connection is closed.
    if (this.#waiting.size === 0 && !this.#stopped) this.#worker?.unref()
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
  const statement = (sql: string): Statement => {
    let found = prepared.get(sql)
    if (found === undefined) {
      // Kept small: the overview's statements name each generation's table, and ids only grow.
      if (prepared.size >= 256) prepared.clear()
      found = db.prepare(sql)
      prepared.set(sql, found)
    }
    return found
  }
  return db.transaction((steps: ReadStep[]) =>
    steps.map((step) =>
      statement(step.sql)
        .pluck(step.pluck === true)
        .all(...step.args),
    ),
  )
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
