/**
 * `pgBossWork(boss, queueName, processor)`: `boss.work` over the sink's queue, one job at a time per
 * fetch, each handed to core's inbox processor (dedup, ordering, the handler, the settle). A job whose
 * processing throws is failed, so pg-boss retries it with the job's retry settings.
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
  boss: Pick<PgBoss, 'work'>,
  queueName: string,
  processor: Pick<InboxProcessor, 'process'>,
  options: PgBossWorkOptions = {},
): Promise<string> {
  if (processor === null || typeof processor !== 'object' || typeof processor.process !== 'function') {
    throw new TypeError('@email-webhooks/pg-boss: pgBossWork needs createInboxProcessor({ handlers, store }).')
  }
  return boss.work<InboxItem>(queueName, { ...options, batchSize: 1 }, async (jobs) => {
    const outcomes: ('handled' | 'duplicate')[] = []
    for (const job of jobs) outcomes.push(await processor.process(job.data))
    return outcomes.length === 1 ? outcomes[0] : outcomes
  })
}
