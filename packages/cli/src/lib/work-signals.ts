/**
 * The signals of `inbox work`, trapped from the start of the command to its end (so that none
 * kills it between its start line and its summary): the first SIGINT or SIGTERM stops the worker
 * (or keeps it from starting), saying how many running entries it waits for; the second exits at
 * once, saying that their leases lapse: after the summary so far it stops trapping the signals
 * and sends itself the same one, which ends it by the signal's default action (shells show 130 for
 * SIGINT, 143 for SIGTERM). Not `process.exit()`: that waits for libuv's threads, and a sync stuck
 * on a disk that stopped answering would keep it waiting forever. While the worker runs the process
 * is kept alive (the worker's own timers are unref'd).
 */
import type { InboxWorkerHandle } from '@email-webhooks/core'
import { EXIT } from './errors.js'
import { formatDuration } from './inbox-output.js'
import type { Output } from './output.js'

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

/** What the first signal says: whether running entries are waited for, and what a second signal does. */
function stoppingLine(signal: NodeJS.Signals, worker: InboxWorkerHandle): string {
  const n = worker.running()
  if (n === 0) return `${signal}: stopping; no entry is running.`
  const { handlerTimeoutMs, leaseMs } = worker.settings
  return `${signal}: stopping; waiting for ${plural(n, 'running entry', 'running entries')} to finish (each within the handler deadline, ${formatDuration(handlerTimeoutMs)}). Another SIGINT or SIGTERM exits at once and lets ${n === 1 ? 'its lease' : 'their leases'} lapse (${formatDuration(leaseMs)}); a worker then takes ${n === 1 ? 'it' : 'them'} again.`
}

/** SIGINT and SIGTERM during one `inbox work`. */
export class WorkSignals {
  readonly #out: Output
  /** Prints what was done so far, before a forced exit. */
  readonly #report: (worker: InboxWorkerHandle, stoppedBy: string) => Promise<void>
  #signal: NodeJS.Signals | undefined
  #worker: InboxWorkerHandle | undefined
  #stopping: Promise<void> | undefined
  #wake: () => void = () => {}
  readonly #listener = (signal: NodeJS.Signals): void => this.#on(signal)

  /**
   * Traps the signals until `dispose()`.
   * @param out Where the messages go (stderr).
   * @param report Prints the summary so far, before a forced exit.
   */
  constructor(out: Output, report: (worker: InboxWorkerHandle, stoppedBy: string) => Promise<void>) {
    this.#out = out
    this.#report = report
    process.on('SIGINT', this.#listener)
    process.on('SIGTERM', this.#listener)
  }

  /**
   * Runs the worker until drained (`once`) or until the first signal, then until it stopped.
   * @returns `'drained'`, or the signal that stopped it (also one that came before it started).
   */
  async run(worker: InboxWorkerHandle, once: boolean): Promise<string> {
    this.#worker = worker
    if (this.#signal) return this.#signal
    const keepAlive = setInterval(() => {}, 2 ** 30)
    try {
      if (once) await worker.drain()
      else {
        worker.start()
        await new Promise<void>((resolve) => {
          this.#wake = resolve
        })
      }
      await this.#stopping
    } finally {
      clearInterval(keepAlive)
    }
    return this.#signal ?? 'drained'
  }

  /** Stops trapping the signals. */
  dispose(): void {
    process.removeListener('SIGINT', this.#listener)
    process.removeListener('SIGTERM', this.#listener)
  }

  #on(signal: NodeJS.Signals): void {
    const worker = this.#worker
    if (this.#signal) {
      this.#force(signal, worker)
      return
    }
    this.#signal = signal
    if (!worker) {
      this.#out.error(`${signal}: stopping before the worker started.`)
      return
    }
    this.#out.error(stoppingLine(signal, worker))
    this.#stopping = worker.stop()
    this.#wake()
  }

  #force(signal: NodeJS.Signals, worker: InboxWorkerHandle | undefined): void {
    if (!worker) {
      this.#endBy(signal)
      return
    }
    const n = worker.running()
    this.#out.error(
      `${signal} again: exiting now with ${plural(n, 'entry', 'entries')} running; ${n === 1 ? 'its lease lapses' : 'their leases lapse'} within ${formatDuration(worker.settings.leaseMs)}, then a worker takes ${n === 1 ? 'it' : 'them'} again (a handler cut off runs again; one that finished is recorded and is not).`,
    )
    void this.#report(worker, `${signal}, forced`).finally(() => this.#endBy(signal))
  }

  /**
   * Ends the process by `signal`'s default action: the kernel ends it without waiting for libuv's
   * threads. If the handlers module traps the signal too, its listener would take it instead and the
   * process would live on: then `process.exit()` (130), as before.
   */
  #endBy(signal: NodeJS.Signals): void {
    this.dispose()
    if (process.listenerCount(signal) > 0) process.exit(EXIT.interrupted)
    process.kill(process.pid, signal)
  }
}
