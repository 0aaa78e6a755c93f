/**
 * `bullmqProcessor(processor)`: the function a BullMQ `Worker` runs for each job of the sink, which
 * hands the queued event to core's inbox processor (dedup, ordering, the handler, the settle). It
 * throws when the job must be tried again, so BullMQ retries it with the job's attempts and backoff,
 * and throws BullMQ's `UnrecoverableError` for a job that can never be processed (core's
 * `InboxItemError`: another namespace, not an event envelope), so it fails at once.
 */
import type { InboxProcessor } from '@email-webhooks/core'
import { type Job, UnrecoverableError } from 'bullmq'
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
  return async (job) => {
    try {
      return await processor.process(job.data)
    } catch (error) {
      // A job that can never be processed (another namespace's key, a payload that is not an event
      // envelope) fails at once instead of using up its attempts.
      if (isUnprocessable(error)) throw new UnrecoverableError(error.message)
      throw error
    }
  }
}

/** Core's InboxItemError (by its name and flag, so that two copies of core still agree). */
function isUnprocessable(error: unknown): error is Error {
  return error instanceof Error && error.name === 'InboxItemError' && (error as { retryable?: unknown }).retryable === false
}
