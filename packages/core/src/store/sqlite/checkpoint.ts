/**
 * The WAL checkpoint of `SqliteDedupStore`, off the event loop (issue 48).
 *
 * SQLite checkpoints in the connection that commits once its WAL passes `wal_autocheckpoint`
 * pages: it syncs the WAL, copies every page into the database file and syncs that, in the
 * commit's call, so on the event loop. With 4 MiB between checkpoints that stalled every request
 * of the process for about 10 ms (bench/profile/loop-stalls.mjs: loop delay p99 9.6 ms, slowest
 * claim 10–12 ms, against 1.7 and 2.3–3.3 ms with no checkpoints at all).
 *
 * Here a second connection in a worker thread does the copying: a PASSIVE checkpoint (it never
 * blocks the writer) at most every PASS_EVERY_MS while the store writes. A PASSIVE checkpoint
 * under constant writes never lets the WAL start over, though (SQLite restarts it at the next
 * write only once every frame is in the file and no reader uses it), and a WAL that only grows
 * makes every lookup search a longer log. So once a pass finds the WAL past RESTART_BYTES, the
 * worker asks the store to hold its commits, through a word of shared memory that the store reads
 * before each batch (no message: the event loop of a busy store delivers them late). The store
 * agrees at its next batch, which then waits (the event loop does not), the worker copies the few
 * frames written since its pass and frees the word, and the first commit after it restarts the
 * WAL. A hold is bounded by HOLD_MAX_MS; if the worker is slower (a slow disk), the store commits
 * anyway and the restart waits for a later round.
 *
 * The writing connection keeps a checkpoint of its own as a backstop, at four times the restart
 * size (it checkpointed at the restart size before the worker started, and does again if the
 * worker fails): several processes on one file do not hold each other's commits, so their WAL
 * may not restart by this path. The worker starts only after START_AFTER_WRITES writes, so that
 * a store that writes little never pays for a thread.
 */
import { Worker } from 'node:worker_threads'

/** Writes (claims, completes, inbox writes) of the store before the worker starts. */
const START_AFTER_WRITES = 1_000
/** Least time between two passes. */
const PASS_EVERY_MS = 50
/** WAL size at which a pass is followed by a held one, so that the WAL restarts. */
const RESTART_BYTES = 4 * 1024 * 1024
/** The writing connection's own checkpoint once the worker runs: a backstop, at this many times the restart size. */
const BACKSTOP_FACTOR = 4
/** Longest hold of the store's commits for one restart. */
const HOLD_MAX_MS = 20
/** How long the worker waits for the store to agree to a hold (it agrees at its next batch). */
const ASK_MAX_MS = 20

/** The shared word: the store commits freely; the worker asks for a hold; the store holds its commits. */
const FREE = 0
const ASKED = 1
const HELD = 2

/**
 * The worker: one connection to the file. On each `pass`, a PASSIVE checkpoint; past the restart
 * size, it asks for a hold, and once the store holds, copies what came since and frees the word.
 * Answers each pass with the frames in the WAL and whether a hold followed.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const { FREE, ASKED, HELD, ASK_MAX_MS, restartFrames, word } = workerData
const state = new Int32Array(word)
const db = new Database(workerData.path, { fileMustExist: true, timeout: 0 })
// A checkpoint syncs the WAL before it copies and the database file before the WAL may start over.
db.pragma('synchronous = FULL')
const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)')[0].log
parentPort.on('message', (message) => {
  if (message !== 'pass') {
    db.close()
    parentPort.close()
    return
  }
  try {
    const log = checkpoint()
    let held = false
    if (log >= restartFrames && Atomics.compareExchange(state, 0, FREE, ASKED) === FREE) {
      Atomics.wait(state, 0, ASKED, ASK_MAX_MS)
      // Not agreed in time (the store wrote nothing meanwhile): withdraw the ask.
      if (Atomics.compareExchange(state, 0, ASKED, FREE) !== ASKED) {
        try {
          checkpoint()
          held = true
        } finally {
          Atomics.compareExchange(state, 0, HELD, FREE)
        }
      }
    }
    parentPort.postMessage({ log, held })
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.code) || error) })
  }
})
`

/** What one pass answers. */
type PassResult = { log: number; held: boolean } | { error: string }

/** What the checkpointer needs of its store. */
export interface CheckpointHost {
  /** The database file. */
  path: string
  /** Where better-sqlite3 loads from (the worker requires the same driver). */
  driver: string
  /** The file's page size in bytes. */
  pageSize: number
  /** Sets the writing connection's own checkpoint (wal_autocheckpoint) to this many pages. */
  autocheckpoint: (pages: number) => void
  /** Called when a hold ends: the store commits what waited. */
  resume: () => void
}

/** Counts of what the checkpointer did (tests and profiles read them). */
export interface CheckpointCounts {
  passes: number
  /** Holds of the store's commits (each one restart of the WAL, unless it timed out). */
  holds: number
  /** Holds that ended by HOLD_MAX_MS before their pass did. */
  holdsTimedOut: number
  /** Passes that failed, and a worker that failed (the writing connection checkpoints meanwhile). */
  failures: number
}

/** The worker thread of one store and its rounds. */
export class Checkpointer {
  readonly #host: CheckpointHost
  readonly #restartFrames: number
  readonly #state = new Int32Array(new SharedArrayBuffer(4))
  #writes = 0
  #worker: Worker | undefined
  /** A pass was asked for and has not answered. */
  #passing = false
  /** The store agreed to a hold that has not ended for it yet (its batch waits for `resume`). */
  #holdOpen = false
  /** Ends the open hold after HOLD_MAX_MS if the worker has not. */
  #holdTimer: ReturnType<typeof setTimeout> | undefined
  #lastPassAt = 0
  #stopped = false
  #exited: Promise<void> | undefined
  readonly counts: CheckpointCounts = { passes: 0, holds: 0, holdsTimedOut: 0, failures: 0 }

  constructor(host: CheckpointHost) {
    this.#host = host
    this.#restartFrames = Math.ceil(RESTART_BYTES / host.pageSize)
  }

  /** The writing connection's own checkpoint before the worker runs (and after it failed), in pages. */
  static autocheckpointPages(pageSize: number): number {
    return Math.ceil(RESTART_BYTES / pageSize)
  }

  /** Whether the worker runs. */
  get running(): boolean {
    return this.#worker !== undefined && !this.#stopped
  }

  /** Whether the store's commits are held now (a purge waits too). */
  get holding(): boolean {
    return Atomics.load(this.#state, 0) === HELD
  }

  /**
   * Called before each batch: false while the batch must wait (the worker copies the WAL's last
   * frames); `resume` is called when it may go. Agrees to a hold the worker asks for.
   */
  mayCommit(): boolean {
    const state = this.#state
    if (Atomics.load(state, 0) === ASKED && Atomics.compareExchange(state, 0, ASKED, HELD) === ASKED) {
      Atomics.notify(state, 0)
      this.counts.holds++
      this.#holdOpen = true
      this.#holdTimer = setTimeout(this.#expire, HOLD_MAX_MS)
      return false
    }
    if (Atomics.load(state, 0) === HELD) return false
    // The worker freed the word before its answer arrived: the hold is over.
    this.#closeHold()
    return true
  }

  /** Counts `writes` just committed; starts the worker or asks for a pass when due. */
  committed(writes: number): void {
    if (this.#stopped) return
    if (this.#worker === undefined) {
      this.#writes += writes
      if (this.#writes >= START_AFTER_WRITES) this.#start()
      return
    }
    if (!this.#passing && performance.now() - this.#lastPassAt >= PASS_EVERY_MS) this.#pass()
  }

  /** Frees the store's commits and ends the worker (its connection closes); resolves once the thread is gone. */
  stop(): Promise<void> {
    if (!this.#stopped) {
      this.#stopped = true
      this.#free()
      this.#worker?.postMessage('stop')
    }
    return this.#exited ?? Promise.resolve()
  }

  #start(): void {
    let worker: Worker
    try {
      worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          driver: this.#host.driver,
          path: this.#host.path,
          word: this.#state.buffer,
          restartFrames: this.#restartFrames,
          FREE,
          ASKED,
          HELD,
          ASK_MAX_MS,
        },
      })
    } catch {
      this.#stopped = true
      return
    }
    worker.unref()
    this.#worker = worker
    this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()))
    worker.on('message', (result: PassResult) => this.#answered(result))
    worker.on('error', () => this.#failed())
    worker.once('exit', () => this.#failed())
    this.#host.autocheckpoint(this.#restartFrames * BACKSTOP_FACTOR)
    this.#pass()
  }

  #pass(): void {
    this.#passing = true
    this.#worker?.postMessage('pass')
  }

  #answered(result: PassResult): void {
    this.#passing = false
    this.#lastPassAt = performance.now()
    this.counts.passes++
    if ('error' in result) this.counts.failures++
    if (this.#closeHold()) this.#host.resume()
  }

  /** The worker is slow (a slow disk): the store commits anyway, and this round's WAL does not restart. */
  readonly #expire = (): void => {
    this.#holdTimer = undefined
    if (Atomics.compareExchange(this.#state, 0, HELD, FREE) === HELD) this.counts.holdsTimedOut++
    if (this.#closeHold()) this.#host.resume()
  }

  /** Ends the store's side of an open hold; true if one was open. */
  #closeHold(): boolean {
    if (!this.#holdOpen) return false
    this.#holdOpen = false
    clearTimeout(this.#holdTimer)
    this.#holdTimer = undefined
    return true
  }

  /** Frees the word whatever it says (the store is closing, or the worker is gone). */
  #free(): void {
    Atomics.store(this.#state, 0, FREE)
    Atomics.notify(this.#state, 0)
    if (this.#closeHold()) this.#host.resume()
  }

  /** The worker is gone or broken: the writing connection checkpoints by itself again. */
  #failed(): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#free()
    this.counts.failures++
    this.#host.autocheckpoint(this.#restartFrames)
    void this.#worker?.terminate()
  }
}
