/**
 * `pgBossWork(boss, queueName, processor)`: `boss.work` over the sink's queue, up to `batchSize` jobs
 * per fetch, all of a batch at once, each handed to core's inbox processor (dedup, ordering, the
 * handler, the settle) and settled on its own. A job processed is completed as soon as it is done,
 * with its outcome (`handled`, `duplicate`) as output; a job that can never be processed (core's
 * `InboxItemError`: another namespace, not an event envelope) is cancelled, since pg-boss 10 has no
 * failure that skips its retries; a job whose processing throws is failed, so pg-boss retries it
 * with the job's retry settings, except that a job whose event is held elsewhere (in_flight) first
 * waits in the worker for the holder's lease, which counts no retry (`inFlightWaitMs`), while the
 * other jobs of its batch go on.
 *
 * How the failures are settled follows pg-boss 10.4's `watch` (manager.js): once the batch's handler
 * resolves it runs `complete(name, <every job id of the batch>)`, whose SQL touches only jobs still
 * `state = 'active'`; once it throws, `fail(name, <every job id>, error)`, whose SQL touches only
 * jobs `state < 'completed'` (created, retry, active). A job failed inside the handler is put back
 * (state retry) and, its `retryDelay` past, may be fetched and made active again by another worker
 * before the batch ends: the `complete` after the handler would then complete that other run. So
 * the failed jobs are not failed one by one: they stay active until every job of the batch is
 * settled, then the handler throws and pg-boss fails exactly them (the completed and cancelled ones
 * are out of its reach), in one statement.
 */
import type { InboxItem, InboxProcessor } from '@email-webhooks/core'
import type PgBoss from 'pg-boss'

/**
 * Options of {@link pgBossWork}: pg-boss's work options (`batchSize`: the jobs fetched at once, all
 * processed at once, each settled on its own), and how long a job whose event is held elsewhere waits.
 */
export type PgBossWorkOptions = Omit<PgBoss.WorkOptions, 'batchSize' | 'includeMetadata'> & {
  /**
   * The most jobs a fetch takes; the jobs of a batch are processed at once, so it is also the most
   * handlers the worker runs at once. pg-boss 10 waits its polling interval after a fetch that took
   * less than it, so a worker drains at most `batchSize` jobs per `pollingIntervalSeconds` when its
   * jobs are quick. A failed job is handed back to pg-boss once every job of its batch is settled.
   * @defaultValue `50`
   */
  batchSize?: number
  /**
   * How long a job whose event (or email) another consumer holds waits in the worker, in all,
   * before it fails like any other try (an attempt), whole ms: a third of pg-boss's default job
   * expiry. pg-boss 10 cannot put a running job back without counting a retry, so the worker waits
   * for the holder's lease to end (a dead consumer's lapses within 30 s on a store that renews
   * leases) and processes the job again; the other jobs of its batch do not wait for it.
   * @defaultValue `300000` (5 minutes)
   */
  inFlightWaitMs?: number
}

/** The most jobs a fetch takes, by default. */
const DEFAULT_BATCH_SIZE = 50

/** The longest an in-flight job waits in the worker, in all, by default. */
const DEFAULT_IN_FLIGHT_WAIT_MS = 300_000

/**
 * Starts a pg-boss worker for the sink's jobs; resolves with the worker id (for `boss.offWork`).
 * @param boss A started `PgBoss`.
 * @param queueName The sink's queue.
 * @param processor From `createInboxProcessor({ handlers, store, namespace })`, with the receiver's store and namespace.
 * @param options `batchSize` (default 50), `pollingIntervalSeconds`, `priority`, and `inFlightWaitMs` (default 5 minutes).
 * @throws {TypeError} when `processor` has no `process`, or `batchSize` or `inFlightWaitMs` is not a whole number in range.
 * @example
 * await pgBossWork(boss, 'email-webhooks', createInboxProcessor({ handlers, store }))
 */
export function pgBossWork(
  boss: Pick<PgBoss, 'work' | 'complete' | 'cancel'>,
  queueName: string,
  processor: Pick<InboxProcessor, 'process'>,
  options: PgBossWorkOptions = {},
): Promise<string> {
  if (processor === null || typeof processor !== 'object' || typeof processor.process !== 'function') {
    throw new TypeError('@email-webhooks/pg-boss: pgBossWork needs createInboxProcessor({ handlers, store }).')
  }
  const { inFlightWaitMs = DEFAULT_IN_FLIGHT_WAIT_MS, batchSize = DEFAULT_BATCH_SIZE, ...workOptions } = options
  if (!Number.isSafeInteger(inFlightWaitMs) || inFlightWaitMs < 0) {
    throw new TypeError(
      `@email-webhooks/pg-boss: inFlightWaitMs must be a whole number of milliseconds ≥ 0, got ${String(inFlightWaitMs)}.`,
    )
  }
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new TypeError(`@email-webhooks/pg-boss: batchSize must be a whole number ≥ 1, got ${String(batchSize)}.`)
  }
  return boss.work<InboxItem>(queueName, { ...workOptions, batchSize }, async (jobs) => {
    // pg-boss gives the handler as long as the batch's longest expiry, then fails every job still
    // active; a job settled after that could be another worker's run of it, so none is.
    const expiresAt = Date.now() + Math.max(1, ...jobs.map((job) => job.expireInSeconds)) * 1000 - EXPIRY_MARGIN_MS
    const settle = async (job: (typeof jobs)[number]): Promise<JobFailure | undefined> => {
      try {
        const outcome = await processWaiting(processor, job.data, inFlightWaitMs)
        // The output pg-boss writes for a batch of one: { value: outcome }.
        if (Date.now() < expiresAt) await boss.complete(queueName, job.id, { value: outcome })
        return undefined
      } catch (error) {
        if (!isUnprocessable(error)) return { id: job.id, error }
        // pg-boss retries every failed job up to its retryLimit: a job that can never be processed
        // (core's InboxItemError, already logged with what to fix) is cancelled instead.
        try {
          if (Date.now() < expiresAt) await boss.cancel(queueName, job.id)
          return undefined
        } catch (cancelError) {
          return { id: job.id, error: cancelError }
        }
      }
    }
    const failed = (await Promise.all(jobs.map(settle))).filter((failure) => failure !== undefined)
    // Resolving: pg-boss completes the jobs still active, none. Throwing: pg-boss fails the jobs
    // still active (state < 'completed'), exactly the failed ones (and one whose complete failed).
    if (failed.length === 1) throw failed[0]?.error
    if (failed.length > 1) throw batchError(failed)
  })
}

/** A job of a batch whose processing failed, and why. */
interface JobFailure {
  id: string
  error: unknown
}

/** How much sooner than pg-boss's own deadline for a batch the worker stops settling its jobs. */
const EXPIRY_MARGIN_MS = 1_000

/**
 * The error pg-boss writes as the output of every failed job of a batch where several failed (one
 * statement fails them all): each job's own error, by job id.
 */
function batchError(failed: JobFailure[]): Error {
  const error = new Error(`${failed.length} jobs of the batch failed; each job's error is under jobs[<job id>].`)
  error.name = 'PgBossBatchError'
  return Object.assign(error, { jobs: Object.fromEntries(failed.map(({ id, error }) => [id, error])) })
}

/** Core's InboxItemError (by its name and flag, so that two copies of core still agree). */
function isUnprocessable(error: unknown): boolean {
  return error instanceof Error && error.name === 'InboxItemError' && (error as { retryable?: unknown }).retryable === false
}

/**
 * Processes one job; while its event is held elsewhere (core's in_flight error), waits for the
 * holder's lease (`retryAfterMs`) and processes it again, for at most `budgetMs` in all; then the
 * error goes to pg-boss, which counts a retry.
 */
async function processWaiting(
  processor: Pick<InboxProcessor, 'process'>,
  item: InboxItem,
  budgetMs: number,
): Promise<'handled' | 'duplicate'> {
  const until = Date.now() + budgetMs
  for (;;) {
    try {
      return await processor.process(item)
    } catch (error) {
      const waitMs = inFlightFor(error)
      if (waitMs === undefined || Date.now() + waitMs > until) throw error
      await new Promise((resolve) => setTimeout(resolve, waitMs + Math.floor(Math.random() * 250)))
    }
  }
}

/** The delay of core's in_flight WebhookHandlingError (by its name and code, so that two copies of core still agree), else undefined. */
function inFlightFor(error: unknown): number | undefined {
  if (!(error instanceof Error) || error.name !== 'WebhookHandlingError' || (error as { code?: unknown }).code !== 'in_flight')
    return undefined
  const ms = (error as { retryAfterMs?: unknown }).retryAfterMs
  return typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? ms : 1_000
}
