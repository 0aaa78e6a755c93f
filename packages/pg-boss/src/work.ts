/**
 * `pgBossWork(boss, queueName, processor)`: `boss.work` over the sink's queue, one job at a time per
 * fetch, each handed to core's inbox processor (dedup, ordering, the handler, the settle). A job whose
 * processing throws is failed, so pg-boss retries it with the job's retry settings, except that a
 * job whose event is held elsewhere (in_flight) first waits in the worker for the holder's lease,
 * which counts no retry (`inFlightWaitMs`); a job that can never be processed (core's `InboxItemError`: another namespace, not an event envelope) is
 * cancelled instead, since pg-boss 10 has no failure that skips its retries.
 */
import type { InboxItem, InboxProcessor } from '@email-webhooks/core'
import type PgBoss from 'pg-boss'

/** Options of {@link pgBossWork}: pg-boss's work options (`batchSize` is 1: one job's failure never fails another), and how long a job whose event is held elsewhere waits. */
export type PgBossWorkOptions = Omit<PgBoss.WorkOptions, 'batchSize' | 'includeMetadata'> & {
  /**
   * How long a job whose event (or email) another consumer holds waits in the worker, in all,
   * before it fails like any other try (an attempt), whole ms: a third of pg-boss's default job
   * expiry. pg-boss 10 cannot put a running job back without counting a retry, so the worker waits
   * for the holder's lease to end (a dead consumer's lapses within 30 s on a store that renews
   * leases) and processes the job again.
   * @defaultValue `300000` (5 minutes)
   */
  inFlightWaitMs?: number
}

/** The longest an in-flight job waits in the worker, in all, by default. */
const DEFAULT_IN_FLIGHT_WAIT_MS = 300_000

/**
 * Starts a pg-boss worker for the sink's jobs; resolves with the worker id (for `boss.offWork`).
 * @param boss A started `PgBoss`.
 * @param queueName The sink's queue.
 * @param processor From `createInboxProcessor({ handlers, store, namespace })`, with the receiver's store and namespace.
 * @param options `pollingIntervalSeconds`, `priority`, and `inFlightWaitMs` (default 5 minutes).
 * @throws {TypeError} when `processor` has no `process`.
 * @example
 * await pgBossWork(boss, 'email-webhooks', createInboxProcessor({ handlers, store }))
 */
export function pgBossWork(
  boss: Pick<PgBoss, 'work' | 'cancel'>,
  queueName: string,
  processor: Pick<InboxProcessor, 'process'>,
  options: PgBossWorkOptions = {},
): Promise<string> {
  if (processor === null || typeof processor !== 'object' || typeof processor.process !== 'function') {
    throw new TypeError('@email-webhooks/pg-boss: pgBossWork needs createInboxProcessor({ handlers, store }).')
  }
  const { inFlightWaitMs = DEFAULT_IN_FLIGHT_WAIT_MS, ...workOptions } = options
  if (!Number.isSafeInteger(inFlightWaitMs) || inFlightWaitMs < 0) {
    throw new TypeError(
      `@email-webhooks/pg-boss: inFlightWaitMs must be a whole number of milliseconds ≥ 0, got ${String(inFlightWaitMs)}.`,
    )
  }
  return boss.work<InboxItem>(queueName, { ...workOptions, batchSize: 1 }, async (jobs) => {
    const outcomes: ('handled' | 'duplicate' | 'cancelled')[] = []
    for (const job of jobs) {
      try {
        outcomes.push(await processWaiting(processor, job.data, inFlightWaitMs))
      } catch (error) {
        if (!isUnprocessable(error)) throw error
        // pg-boss retries every failed job up to its retryLimit: a job that can never be processed
        // (core's InboxItemError, already logged with what to fix) is cancelled instead.
        await boss.cancel(queueName, job.id)
        outcomes.push('cancelled')
      }
    }
    return outcomes.length === 1 ? outcomes[0] : outcomes
  })
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
