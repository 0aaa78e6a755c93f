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
 * blocks the writer) once the store's writes should have brought the WAL to RESTART_BYTES, by the
 * frames per write the last passes measured (PassClock; at least PASS_MIN_MS and at most
 * PASS_MAX_MS apart while the store writes: each pass takes CPU, which on a single core is taken
 * from the event loop, so there are about as few as the writing connection's own checkpoints
 * were). A PASSIVE checkpoint under constant writes never lets the WAL start over, though (SQLite
 * restarts it at the next write only once every frame is in the file and no reader uses it), and a
 * WAL that only grows makes every lookup search a longer log. So once a pass finds the WAL past
 * half of RESTART_BYTES, the worker writes the pages it copied to disk (Linux, where it finds the
 * file's descriptor in /proc; elsewhere the held pass pays for it; SQLite syncs the file only
 * in a pass that reaches the WAL's end, which under writes is the held one: that sync of every page
 * copied since the last made holds last 4–7 ms instead of about 1), catches up, and asks the store
 * to hold its commits, through a word of shared memory that the store reads before each batch (no
 * message: the event loop of a busy store delivers them late). The store agrees at its next batch,
 * which then waits (the event loop does not), the worker copies the few frames written since its
 * pass and frees the word, and the first commit after it restarts the WAL. A hold is bounded by
 * HOLD_MAX_MS; if the worker is slower (a slow disk), the store commits anyway and the restart
 * waits for a later round.
 *
 * The writing connection keeps a checkpoint of its own as a backstop, at three times the restart
 * size (it checkpointed at the restart size before the worker started, and does again if the
 * worker fails), so that the WAL stays bounded when the thread falls behind or several processes
 * share the file (they do not hold each other's commits, so their WAL may not restart by this
 * path). It is a bound, not a hard cap: SQLite lets one connection checkpoint at a time, and while
 * the thread's checkpoint is slow (a sync on a busy disk, a thread not scheduled) the backstop cannot run (a loaded CI run, writing
 * with durability 'normal' as fast as one connection can, saw 18.3 MiB; 16.2 MiB at four times). The worker starts only after START_AFTER_WRITES writes, so that
 * a store that writes little never pays for a thread.
 *
 * Where it runs: when the process may run two threads at once (`parallel`, asked when the worker
 * would start: a process may be pinned to one core after it started), always: the copying then
 * leaves the event loop's core. On a single core (a container of one CPU, or the bench's
 * server pinned to one core) only once the store's inbox writes: inbox mode writes 4.4× the WAL
 * of request mode per event and meets a checkpoint as often, and there the thread took the answer
 * p99 from 14.3–15.6 to 5.8–5.9 ms at the same CPU per request; in request mode on one core it
 * cost 8–10 µs more CPU per request (68–70 → 76–80 µs through Hono) for a p99 that did not change
 * (bench/RESULTS.md, "Issue 48, evening").
 */
import { Worker } from 'node:worker_threads'
import { reasonOf } from './errors.js'
import { GATE_SOURCE, READ_GATE, workerExecArgv } from './reader.js'
import { AUTOCHECKPOINT_BYTES } from './schema.js'

/** Writes (claims, completes, inbox writes) of the store before the worker starts. */
const START_AFTER_WRITES = 1_000
/** Least and most time between two passes while the store writes. */
const PASS_MIN_MS = 20
const PASS_MAX_MS = 1_000
/** Time to the next pass while the WAL's frames per write are not known. */
const PASS_LEARN_MS = 50
/** WAL size at which a pass is followed by a held one, so that the WAL restarts: the writing connection's own checkpoint size. */
const RESTART_BYTES = AUTOCHECKPOINT_BYTES
/**
 * A pass that finds the WAL at least this part of the restart size goes on to the hold. Passes
 * come when the WAL should have reached the restart size, by the frames per write; a figure that fell
 * meanwhile would otherwise cost a second pass, and each pass copies again the pages written since
 * the last (a page written in every batch once per pass): with every pass that found the WAL just
 * short, the thread wrote 55 % more pages into the file than the writing connection's own
 * checkpoints had (20,900 against 13,500 in 3 s at 12,000 events/s, strace).
 */
const HOLD_FROM = 0.5
/** The writing connection's own checkpoint once the worker runs: a backstop, at this many times the restart size. */
const BACKSTOP_FACTOR = 3
/** Longest hold of the store's commits for one restart. */
const HOLD_MAX_MS = 20
/** Failed passes in a row after which the thread is stopped and the writing connection checkpoints by itself again. */
const FAILURES_IN_A_ROW = 3
/** How long the worker waits for the store to agree to a hold (it agrees at its next batch). */
const ASK_MAX_MS = 20

/**
 * Before asking for a hold, the worker passes again (at most CATCH_UP_PASSES more times) until a
 * pass finds at most CATCH_UP_BYTES written during the one before: the held pass copies only what
 * came during the last pass, and a pass over a whole 4 MiB takes long enough for a lot to come.
 */
const CATCH_UP_PASSES = 4
const CATCH_UP_BYTES = 256 * 1024

/** The shared word: the store commits freely; the worker asks for a hold; the store holds its commits. */
const FREE = 0
const ASKED = 1
const HELD = 2

/**
 * The worker: one connection to the file. On each `pass`, a PASSIVE checkpoint; past half the
 * restart size, it syncs the file, catches up, asks for a hold, and once the store holds, copies
 * what came since and frees the word. Answers each pass with a PassResult.
 */
const WORKER_SOURCE = `
const { closeSync, fdatasyncSync, openSync, readdirSync, readlinkSync, readSync } = require('node:fs')
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const { FREE, ASKED, HELD, askMaxMs, CATCH_UP_PASSES, catchUpFrames, holdFrames, word } = workerData
const state = new Int32Array(word)
${GATE_SOURCE}
const db = new Database(workerData.path, { fileMustExist: true, timeout: 0 })
// A checkpoint syncs the WAL before it copies and the database file before the WAL may start over.
db.pragma('synchronous = FULL')
// The frames in the WAL; -1 when SQLite could not checkpoint (another connection was at it).
const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)')[0].log
// How often the WAL has started over: its header's checkpoint sequence (bytes 12-15), the count of
// the connection that last restarted it (each connection keeps its own); -1 when it cannot be read.
const header = Buffer.alloc(16)
let walFd
const restarts = () => {
  try {
    walFd ??= openSync(workerData.path + '-wal', 'r')
    return readSync(walFd, header, 0, 16, 0) === 16 ? header.readUInt32BE(12) : -1
  } catch {
    return -1
  }
}
// A descriptor of the database file, found through /proc (Linux; none elsewhere): the highest-
// numbered one open on it when the thread starts (this thread's connection's, or another's: any
// syncs the same pages). Never closed here: closing any descriptor of the file would drop the
// locks SQLite holds on it for the whole process.
const dbFd = (() => {
  let found
  try {
    for (const name of readdirSync('/proc/self/fd')) {
      try {
        if (readlinkSync('/proc/self/fd/' + name) === workerData.path) found = Number(name)
      } catch {}
    }
  } catch {}
  return found
})()
// Writes the pages the passes copied to disk while the store still commits: SQLite syncs the
// database file in the pass that reaches the WAL's end, which is the held one, and a sync of every
// page copied since the last one made most holds last 4-7 ms instead of about one. True when it
// synced, false when there is no descriptor (or it is gone); a failed sync is thrown: Linux says
// a writeback error once, so SQLite's own sync after it would succeed and let the WAL start over
// on pages that may not be on disk.
const presync = () => {
  if (dbFd === undefined) return false
  try {
    if (readlinkSync('/proc/self/fd/' + dbFd) !== workerData.path) return false
  } catch {
    return false
  }
  try {
    fdatasyncSync(dbFd)
    return true
  } catch (error) {
    if (error && error.code === 'EBADF') return false
    throw Object.assign(new Error('fdatasync of the database file: ' + ((error && error.code) || error)), { syncFailed: true })
  }
}
parentPort.on('message', (message) => {
  if (message !== 'pass') {
    db.close()
    if (walFd !== undefined) closeSync(walFd)
    parentPort.close()
    return
  }
  try {
    const before = restarts()
    let log = checkpoint()
    let held = false
    let presynced = false
    if (log >= holdFrames) {
      presynced = presync()
      // Catch up first: the held pass copies what came during the last one, so that one must be short.
      for (let more = 0; more < CATCH_UP_PASSES; more++) {
        const next = checkpoint()
        const fresh = next - log
        log = next
        // A busy checkpoint (-1) ends the catch-up, and the round: another connection is at it.
        if (fresh <= catchUpFrames) break
      }
    }
    if (log >= holdFrames) {
      // The reading thread's gate (reader.ts): closed for the held pass once no read runs, for at most
      // gateWaitMs of waiting (a long read: the pass goes on, and the WAL may not start over).
      const closed = takeGate(workerData.READ_GATE.PASSING, workerData.gateWaitMs)
      try {
        if (Atomics.compareExchange(state, 0, FREE, ASKED) === FREE) {
          Atomics.wait(state, 0, ASKED, askMaxMs)
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
      } finally {
        openGate(closed)
      }
    }
    parentPort.postMessage({ log, held, restarts: before, presynced })
  } catch (error) {
    // SQLite's own sync of the file failing in a checkpoint is the same fault as ours.
    const syncFailed = Boolean(error && (error.syncFailed || error.code === 'SQLITE_IOERR_FSYNC'))
    parentPort.postMessage({ error: (error && error.syncFailed && error.message) || String((error && error.code) || error), syncFailed })
  }
})
`

/**
 * What one pass answers: the frames in the WAL (-1: another connection was checkpointing), whether
 * a held pass followed (the WAL starts over at the store's next commit), the WAL header's restart
 * count when the pass began (-1: unknown), and whether the pages it copied were written to disk
 * before it asked for the hold; or why it failed (`syncFailed`: the database file could not be synced).
 */
export type PassResult = { log: number; held: boolean; restarts: number; presynced?: boolean } | { error: string; syncFailed?: boolean }

/**
 * When the next pass is due: once the store has made as many writes as should bring the WAL to the
 * restart size, by the WAL's frames per write between the last two passes (at least PASS_MIN_MS
 * and at most PASS_MAX_MS apart while the store writes; every PASS_LEARN_MS while no figure is
 * known). Counted in writes, not time: after a pause, growth measured over time looked slow, the
 * next pass came too late, the WAL reached the backstop, and from then on no pass measured it
 * again (bench/RESULTS.md, "Issue 48, night": passes a second apart, and the backstop's checkpoints
 * stalled commits for 11–37 ms five times a second). The WAL header's restart count says whether
 * the WAL started over between two passes by other hands than a hold (the backstop): one such
 * restart is counted as a whole backstop's worth of frames, so that passes that came too late are
 * brought forward, not taken as a WAL that grew slowly. The count is the restarting connection's
 * own (each keeps one), so with several connections writing the file it jumps about: any other
 * difference than none or one is not read, and a WAL that shrank is taken to have started over once.
 */
export class PassClock {
  readonly #restartFrames: number
  readonly #backstopFrames: number
  /** Writes since the last pass answered, and when it did. */
  #writes = 0
  #lastAt = Number.NEGATIVE_INFINITY
  /** The WAL at the last pass: frames since it last started over, and its restarts (-1: unknown). */
  #sample: { log: number; restarts: number } | undefined
  /** Frames a write added to the WAL between the last two passes that measured it (0: not known yet). */
  #perWrite = 0
  /** Writes after the last pass at which the next is due. */
  #dueAfter = 0

  constructor(restartFrames: number, backstopFrames: number) {
    this.#restartFrames = restartFrames
    this.#backstopFrames = backstopFrames
  }

  /** Frames a write adds to the WAL, as last measured (0: not known yet). */
  get framesPerWrite(): number {
    return this.#perWrite
  }

  /** Counts writes the store just committed. */
  wrote(writes: number): void {
    this.#writes += writes
  }

  /** Whether a pass is due at `now` (ms). */
  due(now: number): boolean {
    const since = now - this.#lastAt
    if (since < PASS_MIN_MS) return false
    if (this.#perWrite === 0) return since >= PASS_LEARN_MS
    return this.#writes >= this.#dueAfter || since >= PASS_MAX_MS
  }

  /** Takes the answer of the pass that ended at `now` (ms); `held` false for a hold that timed out (the WAL did not start over). */
  answered(now: number, result: PassResult): void {
    this.#lastAt = now
    // A failed or busy pass measures nothing; its writes count in the next figure.
    if ('error' in result || result.log < 0) return
    const writes = this.#writes
    this.#writes = 0
    const last = this.#sample
    const between = last === undefined ? undefined : restartsBetween(last, result)
    if (last !== undefined && between !== undefined && writes > 0) {
      const grown = between * this.#backstopFrames + result.log - last.log
      if (grown > 0) this.#perWrite = grown / writes
    }
    // After a hold, the WAL starts over at the store's next commit: count from there.
    const frames = result.held ? 0 : result.log
    const restarts = result.restarts < 0 ? -1 : result.held ? (result.restarts + 1) >>> 0 : result.restarts
    this.#sample = { log: frames, restarts }
    this.#dueAfter = this.#perWrite > 0 ? (this.#restartFrames - frames) / this.#perWrite : 0
  }
}

/**
 * Restarts of the WAL between a pass's sample and the next pass's answer, other than the one a
 * hold made (counted in the sample): what the header's count says when it says none or one;
 * undefined, nothing to measure from, when it is one short (the hold's restart did not come);
 * else (unknown, or another connection's count) one if the WAL shrank, none if it grew (it may
 * have started over and grown past the sample: a figure too low once).
 */
function restartsBetween(last: { log: number; restarts: number }, result: { log: number; restarts: number }): number | undefined {
  if (result.restarts >= 0 && last.restarts >= 0) {
    const counted = (result.restarts - last.restarts) | 0
    if (counted === 0 || counted === 1) return counted
    if (counted === -1) return undefined
  }
  return result.log >= last.log ? 0 : 1
}

/** What the checkpointer needs of its store. */
export interface CheckpointHost {
  /** The database file. */
  path: string
  /** Where better-sqlite3 loads from (the worker requires the same driver); asked when the worker starts. */
  driver: () => string
  /** The file's page size in bytes. */
  pageSize: number
  /** Sets the writing connection's own checkpoint (wal_autocheckpoint) to this many pages. */
  autocheckpoint: (pages: number) => void
  /** Called when a hold ends: the store commits what waited. */
  resume: () => void
  /** Called once if the thread stops for good (why): the writing connection checkpoints by itself again. */
  stopped: (reason: string) => void
  /**
   * Called once if the database file could not be synced (why): the thread has stopped and the
   * writing connection's own checkpoint is off, so that no checkpoint lets the WAL start over on
   * pages that may not be on disk; the store must refuse all work from now on.
   */
  syncFailed: (reason: string) => void
  /** Bounds of a hold, of the worker's wait for the store to agree and of its wait for a read to end (tests widen or narrow them). */
  timings?: { holdMaxMs?: number; askMaxMs?: number; gateWaitMs?: number }
  /** Whether the process may run two threads at once now (else the worker waits for inbox writes); asked once, when the worker would start. */
  parallel: () => boolean
  /**
   * A word shared with the store's reading thread (reader.ts: READ_GATE): the held pass closes it
   * first, waiting up to READ_GATE.checkpointWaitMs (or timings.gateWaitMs) for a read to end, since a read's snapshot would keep the pass
   * from copying the WAL's last frames and the WAL from starting over.
   */
  gate?: SharedArrayBuffer | undefined
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
  /** Passes that wrote the pages they copied to disk before asking for a hold (Linux). */
  presyncs: number
}

/** The worker thread of one store and its rounds. */
export class Checkpointer {
  readonly #host: CheckpointHost
  readonly #restartFrames: number
  readonly #state = new Int32Array(new SharedArrayBuffer(4))
  #writes = 0
  /** Passes that failed since the last that did not. */
  #failedInARow = 0
  /** The store's inbox has written. */
  #inbox = false
  /** Whether the process could run two threads at once when the store reached START_AFTER_WRITES. */
  #parallel: boolean | undefined
  #worker: Worker | undefined
  /** A pass was asked for and has not answered. */
  #passing = false
  /** The store agreed to a hold that has not ended for it yet (its batch waits for `resume`). */
  #holdOpen = false
  /** Ends the open hold after HOLD_MAX_MS if the worker has not. */
  #holdTimer: ReturnType<typeof setTimeout> | undefined
  /** The last hold ended by HOLD_MAX_MS: its pass did not restart the WAL. */
  #holdExpired = false
  readonly #clock: PassClock
  #stopped = false
  #exited: Promise<void> | undefined
  readonly counts: CheckpointCounts = { passes: 0, holds: 0, holdsTimedOut: 0, failures: 0, presyncs: 0 }

  constructor(host: CheckpointHost) {
    this.#host = host
    this.#restartFrames = Math.ceil(RESTART_BYTES / host.pageSize)
    this.#clock = new PassClock(this.#restartFrames, this.#restartFrames * BACKSTOP_FACTOR)
  }

  /** Whether the worker runs. */
  get running(): boolean {
    return this.#worker !== undefined && !this.#stopped
  }

  /** Frames a write adds to the WAL, as the passes measured (tests read it). */
  get framesPerWrite(): number {
    return this.#clock.framesPerWrite
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
    // Stopped (the store is closing): its last batch commits, whatever a pass still running asks.
    if (this.#stopped) return true
    const state = this.#state
    if (Atomics.load(state, 0) === ASKED && Atomics.compareExchange(state, 0, ASKED, HELD) === ASKED) {
      Atomics.notify(state, 0)
      this.counts.holds++
      this.#holdOpen = true
      this.#holdTimer = setTimeout(this.#expire, this.#host.timings?.holdMaxMs ?? HOLD_MAX_MS)
      return false
    }
    if (Atomics.load(state, 0) === HELD) return false
    // The worker freed the word before its answer arrived: the hold is over.
    this.#closeHold()
    return true
  }

  /** Counts `writes` just committed (`inbox`: some were the inbox's); starts the worker or asks for a pass when due. */
  committed(writes: number, inbox = false): void {
    if (this.#stopped) return
    if (this.#worker === undefined) {
      this.#writes += writes
      this.#inbox ||= inbox
      if (this.#writes < START_AFTER_WRITES) return
      this.#parallel ??= this.#host.parallel()
      if (this.#parallel || this.#inbox) this.#start()
      return
    }
    this.#clock.wrote(writes)
    if (!this.#passing && this.#clock.due(performance.now())) this.#pass()
  }

  /** Frees the store's commits and ends the worker (its connection closes); resolves once the thread is gone. */
  stop(): Promise<void> {
    if (!this.#stopped) {
      this.#stopped = true
      this.#free()
      // Referenced again: the process must live until the thread has closed its connection.
      this.#worker?.ref()
      this.#worker?.postMessage('stop')
    }
    return this.#exited ?? Promise.resolve()
  }

  #start(): void {
    let worker: Worker
    try {
      worker = new Worker(WORKER_SOURCE, {
        eval: true,
        execArgv: workerExecArgv(),
        workerData: {
          driver: this.#host.driver(),
          path: this.#host.path,
          word: this.#state.buffer,
          holdFrames: Math.ceil(this.#restartFrames * HOLD_FROM),
          FREE,
          ASKED,
          HELD,
          askMaxMs: this.#host.timings?.askMaxMs ?? ASK_MAX_MS,
          CATCH_UP_PASSES,
          catchUpFrames: Math.ceil(CATCH_UP_BYTES / this.#host.pageSize),
          gate: this.#host.gate,
          READ_GATE,
          gateWaitMs: this.#host.timings?.gateWaitMs ?? READ_GATE.checkpointWaitMs,
        },
      })
    } catch (error) {
      this.#stopped = true
      this.counts.failures++
      this.#host.stopped(`the thread could not start: ${reasonOf(error)}`)
      return
    }
    worker.unref()
    this.#worker = worker
    this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()))
    worker.on('message', (result: PassResult) => this.#answered(result))
    worker.on('error', (error) => this.#failed(`the thread failed: ${reasonOf(error)}`))
    worker.once('exit', (code) => this.#failed(`the thread exited with code ${code}`))
    this.#host.autocheckpoint(this.#restartFrames * BACKSTOP_FACTOR)
    this.#pass()
  }

  #pass(): void {
    this.#passing = true
    this.#worker?.postMessage('pass')
  }

  #answered(result: PassResult): void {
    this.#passing = false
    this.counts.passes++
    const expired = this.#holdExpired
    this.#holdExpired = false
    if ('error' in result) {
      this.counts.failures++
      if (result.syncFailed) {
        this.#fileFailed(result.error)
        return
      }
      // A thread whose checkpoints keep failing gives the checkpoint back to the writing connection.
      if (++this.#failedInARow >= FAILURES_IN_A_ROW) this.#failed(`${FAILURES_IN_A_ROW} checkpoints in a row failed: ${result.error}`)
    } else {
      this.#failedInARow = 0
      if (result.presynced) this.counts.presyncs++
    }
    // A hold that timed out let the store commit meanwhile: the WAL did not start over.
    this.#clock.answered(performance.now(), expired && !('error' in result) ? { ...result, held: false } : result)
    if (this.#closeHold()) this.#host.resume()
  }

  /** The worker is slow (a slow disk): the store commits anyway, and this round's WAL does not restart. */
  readonly #expire = (): void => {
    this.#holdTimer = undefined
    if (Atomics.compareExchange(this.#state, 0, HELD, FREE) === HELD) {
      this.counts.holdsTimedOut++
      this.#holdExpired = true
    }
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

  /**
   * The database file could not be synced: Linux reports a writeback error once, so a later sync
   * (SQLite's own, in the next held pass or the writing connection's checkpoint) would succeed and
   * let the WAL start over on pages that may not be on disk. Nothing checkpoints from now on (the
   * WAL keeps every frame) and the store fails first, so that the batch the resume lets go is refused.
   */
  #fileFailed(reason: string): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#host.syncFailed(reason)
    this.#host.autocheckpoint(0)
    this.#free()
    void this.#worker?.terminate()
  }

  /** The worker is gone or broken: the writing connection checkpoints by itself again, and the store says why. */
  #failed(reason: string): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#free()
    this.counts.failures++
    this.#host.autocheckpoint(this.#restartFrames)
    void this.#worker?.terminate()
    this.#host.stopped(reason)
  }
}
