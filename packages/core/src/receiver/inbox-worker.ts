/**
 * `createInboxWorker`: the inbox worker of an inbox-mode receiver, without the receiver, for a
 * process of its own (`email-webhooks inbox work`, a script, a cron job). It is the receiver's own
 * worker (worker.ts) over the store's inbox, on a pipeline built from the same options, so an entry
 * goes through the same path as in the receiver's process: dedup, ordering, facts, deadlines,
 * retries with backoff, dead letters.
 */
import type { InboxQueue, InboxStats } from '../store/inbox.js'
import type { Telemetry } from '../telemetry/index.js'
import type { ResolvedInbox } from './inbox-options.js'
import { PACKAGE, type ResolvedOptions, resolveOptions } from './options.js'
import { createPipeline, type Pipeline } from './pipeline.js'
import type { Reporter } from './report.js'
import type {
  EmailEventHandlers,
  HandlerContext,
  InboxDeadLetter,
  InboxOptions,
  InboxWorkCounts,
  ReceiverInbox,
  ReceiverOptions,
  ReceiverStats,
  WebhookOptions,
} from './types.js'
import { InboxWorker } from './worker.js'

/**
 * Options of {@link createInboxWorker}: the receiver's (the same `store`, `namespace`, `ordering`,
 * `handlers`, `inbox` settings), without what only a request needs (the secret, `mode`, the
 * timestamp window, the body limit, `inbox.sink`, `inbox.inRequest`, `inbox.worker`).
 */
export interface InboxWorkerOptions extends Omit<WebhookOptions, 'mode' | 'inbox' | 'toleranceSeconds' | 'maxBodyBytes'> {
  /**
   * The receiver's handlers, keyed by email event type: the worker runs each entry's through the
   * receiver's path from the claim on (dedup, ordering, deadlines, retries, dead letters).
   */
  handlers?: EmailEventHandlers
  /** The worker's settings: concurrency, maxAttempts, handlerTimeoutMs, leaseMs, retryBaseMs, retryMaxMs, pollMs. */
  inbox?: Omit<InboxOptions, 'sink' | 'inRequest' | 'worker'>
  /** Observes every entry the worker gives up on; when given, the default log lines about dead letters are not written. What it throws is ignored. */
  onDeadLetter?: (letter: InboxDeadLetter) => void
}

/** The worker's settings after the checks, with the defaults filled in. */
export interface InboxWorkerSettings {
  namespace: string
  concurrency: number
  maxAttempts: number
  handlerTimeoutMs: number
  leaseMs: number
  retryBaseMs: number
  retryMaxMs: number
  pollMs: number
  /** Whether entries of one email are taken one at a time, oldest first (`ordering: true` on a store that keeps marks). */
  ordered: boolean
}

/** A worker over a store's inbox, in a process of its own. */
export interface InboxWorkerHandle extends ReceiverInbox {
  /** The store's inbox it takes from. */
  readonly queue: InboxQueue
  readonly settings: Readonly<InboxWorkerSettings>
  /** Handles what is due now, `concurrency` at a time, and resolves once nothing is due; entries whose retry time has not come wait. `stop()` ends it early. */
  drain(): Promise<void>
  /** How many entries it holds now (taken, handler running or settling). */
  running(): number
  /** What it did since it was built, by result. */
  counts(): InboxWorkCounts
  /** Its receiver counters (handled, duplicates, dead, failed attempts by code). */
  receiverStats(): ReceiverStats
}

/**
 * The worker's pipeline: the receiver's options with the inbox's deadlines (a handler may take
 * minutes after the answer), and the reporter of the receiver it works for, if any.
 */
export function workerPipeline<Ctx>(
  resolved: ResolvedOptions<Ctx>,
  settings: ResolvedInbox,
  onError: WebhookOptions['onError'],
  shared?: { reporter: Reporter; telemetry: Telemetry | undefined },
): Pipeline<HandlerContext> {
  const options = { ...resolved, handlerTimeoutMs: settings.handlerTimeoutMs, leaseMs: settings.leaseMs }
  const pipeline = createPipeline(options, onError, shared) as unknown as Pipeline<HandlerContext>
  pipeline.retriedBy = 'inbox worker'
  return pipeline
}

/** Counts and lag of a queue, as `ReceiverInbox.stats()` gives them. */
export async function queueStats(queue: InboxQueue): Promise<InboxStats & { lagMs: number | null }> {
  const stats = await queue.stats()
  return { ...stats, lagMs: stats.oldestPendingAt === null ? null : Math.max(0, Date.now() - stats.oldestPendingAt) }
}

/**
 * Builds a worker over the inbox of the receiver's store, not started: `start()` runs it until
 * `stop()`, `drain()` handles what is due and resolves. Give it the options the receiver has
 * (its store, namespace, ordering, handlers, inbox settings), and `inbox: { worker: false }` to
 * the receiver so that only this worker runs the handlers.
 * @param options The receiver's options, as {@link InboxWorkerOptions}; `store` defaults to the receiver's default (the SQLite file on Node).
 * @throws {TypeError} for invalid options (as `createReceiver`), an `inbox.sink`, or a store without an inbox.
 * @example
 * const worker = createInboxWorker({ store, handlers, inbox: { maxAttempts: 5 } })
 * await worker.drain() // a cron job: handle what is due, then exit
 */
export function createInboxWorker(options: InboxWorkerOptions): InboxWorkerHandle {
  if (options === null || typeof options !== 'object') throw new TypeError(`${PACKAGE} createInboxWorker needs an options object.`)
  const { onDeadLetter, inbox = {}, ...rest } = options
  if (onDeadLetter !== undefined && typeof onDeadLetter !== 'function') throw new TypeError(`${PACKAGE} onDeadLetter must be a function.`)
  if (inbox === null || typeof inbox !== 'object') throw new TypeError(`${PACKAGE} inbox must be an object of options.`)
  if ((inbox as InboxOptions).sink !== undefined) {
    throw new TypeError(
      `${PACKAGE} createInboxWorker runs the store's inbox; with inbox.sink your queue's workers run the handlers (createInboxProcessor).`,
    )
  }
  if (rest.store !== undefined && rest.store !== 'memory' && rest.store !== null && typeof rest.store === 'object' && !rest.store.inbox) {
    throw new TypeError(`${PACKAGE} createInboxWorker takes entries from the store's inbox (store.inbox), and this store has none.`)
  }
  const resolved = resolveOptions({ ...rest, mode: 'inbox', inbox: { ...inbox, worker: false } } as ReceiverOptions<HandlerContext>)
  const settings = resolved.inbox as ResolvedInbox
  const queue = settings.queue as InboxQueue
  const p = workerPipeline(resolved, settings, options.onError)
  const worker = new InboxWorker(p, queue, settings, onDeadLetter)
  p.telemetry?.observeInbox(() => queueStats(queue))
  const { concurrency, maxAttempts, handlerTimeoutMs, leaseMs, retryBaseMs, retryMaxMs, pollMs } = settings
  return {
    queue,
    settings: {
      namespace: resolved.namespace,
      concurrency,
      maxAttempts,
      handlerTimeoutMs,
      leaseMs,
      retryBaseMs,
      retryMaxMs,
      pollMs,
      ordered: p.ordering === 'on',
    },
    start: () => worker.start(),
    stop: () => worker.stop(),
    work: () => worker.work(),
    drain: () => worker.drain(),
    running: () => worker.running(),
    counts: () => worker.counts(),
    receiverStats: () => p.reporter.stats(),
    stats: () => queueStats(queue),
  }
}
