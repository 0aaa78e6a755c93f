/**
 * `bullmqProcessor(processor)`: the function a BullMQ `Worker` runs for each job of the sink, which
 * hands the queued event to core's inbox processor (dedup, ordering, the handler, the settle). It
 * throws when the job must be tried again, so BullMQ retries it with the job's attempts and backoff.
 */
import type { InboxProcessor } from '@email-webhooks/core'
import type { Job } from 'bullmq'
import type { BullmqInboxJobData } from './sink.js'

/** A BullMQ processor function for the sink's jobs; its result is the job's return value. */
export type BullmqInboxProcessorFn = (job: Pick<Job<BullmqInboxJobData>, 'data'>) => Promise<'handled' | 'duplicate'>

/**
 * Wraps `createInboxProcessor(…)` for `new Worker(name, …)`.
 * @param processor From `createInboxProcessor({ handlers, store, namespace })`, with the receiver's store and namespace.
 * @throws {TypeError} when `processor` has no `process`.
 * @example
 * const processor = createInboxProcessor({ handlers, store })
 * const worker = new Worker('email-webhooks', bullmqProcessor(processor), { connection })
 */
export function bullmqProcessor(processor: Pick<InboxProcessor, 'process'>): BullmqInboxProcessorFn {
  if (processor === null || typeof processor !== 'object' || typeof processor.process !== 'function') {
    throw new TypeError('@email-webhooks/bullmq: bullmqProcessor needs createInboxProcessor({ handlers, store }).')
  }
  return (job) => processor.process(job.data)
}
