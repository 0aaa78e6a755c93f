/**
 * `bullmqProcessor(processor)`: the function a BullMQ `Worker` runs for each job of the sink, which
 * hands the queued event to core's inbox processor (dedup, ordering, the handler, the settle). It
 * throws when the job must be tried again, so BullMQ retries it with the job's attempts and backoff;
 * a job whose event is held elsewhere (in_flight: a dead consumer's lease, another event of the
 * email) is moved to delayed until that lease can have ended, which counts no attempt; and it throws
 * BullMQ's `UnrecoverableError` for a job that can never be processed (core's `InboxItemError`:
 * another namespace, not an event envelope), so it fails at once.
 */
import type { InboxProcessor } from '@email-webhooks/core'
import { DelayedError, type Job, UnrecoverableError } from 'bullmq'
import type { BullmqInboxJobData } from './sink.js'

/** The part of a BullMQ job the processor uses. */
export type BullmqInboxJob = Pick<Job<BullmqInboxJobData>, 'data' | 'moveToDelayed'>

/** A BullMQ processor function for the sink's jobs (`(job, token)`, as a Worker calls it); its result is the job's return value. */
export type BullmqInboxProcessorFn = (job: BullmqInboxJob, token?: string) => Promise<'handled' | 'duplicate'>

/** Added to an in-flight job's delay, at random up to this, so that the jobs of one email do not all come back at once. */
const DELAY_JITTER_MS = 250

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
  return async (job, token) => {
    try {
      return await processor.process(job.data)
    } catch (error) {
      // A job that can never be processed (another namespace's key, a payload that is not an event
      // envelope) fails at once instead of using up its attempts.
      if (isUnprocessable(error)) throw new UnrecoverableError(error.message)
      // Held elsewhere (a consumer that died mid-handler holds the event until its lease lapses, or
      // another event of the email runs): delayed until then, without counting an attempt, so the
      // attempts never run out while the event waits.
      const retryAfterMs = inFlightFor(error)
      if (retryAfterMs !== undefined && token !== undefined) {
        await job.moveToDelayed(Date.now() + retryAfterMs + Math.floor(Math.random() * DELAY_JITTER_MS), token)
        throw new DelayedError()
      }
      throw error
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

/** Core's InboxItemError (by its name and flag, so that two copies of core still agree). */
function isUnprocessable(error: unknown): error is Error {
  return error instanceof Error && error.name === 'InboxItemError' && (error as { retryable?: unknown }).retryable === false
}
