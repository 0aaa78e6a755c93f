/**
 * `pgBossWork(boss, queueName, processor)`: `boss.work` over the sink's queue, one job at a time per
 * fetch, each handed to core's inbox processor (dedup, ordering, the handler, the settle). A job whose
 * processing throws is failed, so pg-boss retries it with the job's retry settings; a job that can
 * never be processed (core's `InboxItemError`: another namespace, not an event envelope) is
 * cancelled instead, since pg-boss 10 has no failure that skips its retries.
 */
import type { InboxItem, InboxProcessor } from '@email-webhooks/core'
import type PgBoss from 'pg-boss'

/** Work options the helper leaves to you (`batchSize` is 1: one job's failure never fails another). */
export type PgBossWorkOptions = Omit<PgBoss.WorkOptions, 'batchSize' | 'includeMetadata'>

/**
 * Starts a pg-boss worker for the sink's jobs; resolves with the worker id (for `boss.offWork`).
 * @param boss A started `PgBoss`.
 * @param queueName The sink's queue.
 * @param processor From `createInboxProcessor({ handlers, store, namespace })`, with the receiver's store and namespace.
 * @param options `pollingIntervalSeconds`, `priority`.
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
  return boss.work<InboxItem>(queueName, { ...options, batchSize: 1 }, async (jobs) => {
    const outcomes: ('handled' | 'duplicate' | 'cancelled')[] = []
    for (const job of jobs) {
      try {
        outcomes.push(await processor.process(job.data))
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
