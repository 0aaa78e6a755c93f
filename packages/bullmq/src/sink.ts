/**
 * `bullmqSink(queue)`: the `inbox.sink` of an inbox-mode receiver that hands each verified event to
 * a BullMQ queue, with the event's dedup key (encoded, BullMQ forbids ':' in custom ids) as the job
 * id: a redelivery finds the job there and makes no second one, for as long as BullMQ keeps it.
 */
import type { InboxItem, InboxSink } from '@email-webhooks/core'
import { checkRedisDurability, type RedisClient } from '@email-webhooks/core/redis'
import type { JobsOptions, Queue } from 'bullmq'

/** What a job of the sink carries: the queued event, and which call queued it (to tell a duplicate add). */
export interface BullmqInboxJobData extends InboxItem {
  /** A random id of the `enqueue` call that made the job: an add that finds another id was a duplicate. */
  enqueueId: string
}

/** Job options the sink leaves to you (`jobId` and `removeOnComplete` are its own). */
export type BullmqSinkJobOptions = Omit<JobsOptions, 'jobId' | 'removeOnComplete' | 'repeat' | 'parent' | 'deduplication' | 'debounce'>

/** Options of {@link bullmqSink}. */
export interface BullmqSinkOptions {
  /**
   * BullMQ job options but `jobId`, `removeOnComplete`, `repeat`, `parent`, `deduplication` and
   * `debounce`, merged over the queue's `defaultJobOptions` and `BULLMQ_JOB_DEFAULTS`: attempts,
   * backoff, priority, `removeOnFail`…
   */
  jobOptions?: BullmqSinkJobOptions
  /**
   * The job's name.
   * @defaultValue the event type
   */
  jobName?: (item: InboxItem) => string
  /**
   * Check once that the queue's Redis keeps acknowledged events through a restart and never evicts
   * them (`appendonly yes`, `appendfsync always`, `maxmemory-policy noeviction`), as the Redis
   * dedup store does, and refuse every enqueue (503: nothing acknowledged) while it does not.
   * `false` accepts a Redis that may lose queued events, and says so once at start-up.
   * @defaultValue `true`
   */
  checkDurability?: boolean
  /**
   * Where the start-up line about an unchecked or uncheckable Redis goes.
   * @defaultValue `console.warn`
   */
  warn?: (message: string) => void
}

/** The queue, as far as the sink uses it (a BullMQ `Queue`). */
export type BullmqQueueLike = Pick<Queue, 'add' | 'getJob' | 'defaultJobOptions' | 'name' | 'client'>

/**
 * Retries when the queue's `defaultJobOptions` and the sink's `jobOptions` give none: 10 attempts,
 * exponential backoff from 1 s with 50 % jitter (1 s, 2 s, 4 s … about 8.5 min in all), and a job
 * that used them all kept as failed (your dead letter: `job.retry()` runs it again).
 */
export const BULLMQ_JOB_DEFAULTS: Readonly<BullmqSinkJobOptions> = Object.freeze({
  attempts: 10,
  backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 },
  removeOnFail: false,
})

/**
 * The BullMQ job id of a dedup key (`namespace:webhook-id`): `ewh-` and the key with `%` and `:`
 * percent-encoded. Deterministic (every delivery of an event gets the same id), one id per key, never
 * a `:` (which BullMQ refuses in custom ids) and never a bare integer (which it refuses too).
 */
export function bullmqJobId(key: string): string {
  return `ewh-${key.replace(/%/g, '%25').replace(/:/g, '%3A')}`
}

function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}

/**
 * An `InboxSink` over a BullMQ queue. `enqueue` resolves once Redis ran BullMQ's add, on a server
 * checked (once, `checkDurability`) to keep it through a restart: `'queued'` when this call made the job, `'duplicate'` when a
 * job with the event's id was already there (waiting, active, delayed, or completed and still kept);
 * a failed one (its attempts used up) is retried from zero attempts and answers `'queued'`. Completed jobs are kept at least `retentionMs` (`removeOnComplete: { age }`), so
 * redeliveries in that time are duplicates; the processor deduplicates through the store anyway.
 * @param queue The BullMQ `Queue` your workers take from.
 * @param options Job options and name.
 * @throws {TypeError} when `queue` is not a BullMQ queue. An enqueue rejects with a `DedupStoreError` `misconfigured` (the receiver answers 503) while the queue's Redis can lose events.
 * @example
 * const queue = new Queue('email-webhooks', { connection })
 * app.post('/hooks', emailWebhook(secret, {}, { mode: 'inbox', inbox: { sink: bullmqSink(queue) }, store }))
 */
export function bullmqSink(queue: BullmqQueueLike, options: BullmqSinkOptions = {}): InboxSink {
  let ensureDurable: (() => Promise<void>) | undefined
  if (queue === null || typeof queue !== 'object' || typeof queue.add !== 'function' || typeof queue.getJob !== 'function') {
    throw new TypeError('@email-webhooks/bullmq: bullmqSink needs a BullMQ Queue (new Queue(name, { connection })).')
  }
  const jobName = options.jobName ?? ((item: InboxItem) => item.type)
  const warn = options.warn ?? ((message: string) => console.warn(message))
  const target = `the Redis of BullMQ queue ${queue.name}`
  let checked: Promise<void> | undefined
  if (options.checkDurability === false) {
    warn(
      `[@email-webhooks/bullmq] bullmqSink: checkDurability is false, so ${target} is not checked: unless it runs with appendonly yes and appendfsync always, a restart loses events the receiver acknowledged (200 queued).`,
    )
  } else {
    // Started now, so a Redis that can lose events is said at start-up, not at the first delivery.
    const check = (): Promise<void> =>
      queue.client.then((client) => checkRedisDurability(client as unknown as RedisClient, { target, warn }))
    checked = check()
    checked.catch((error: unknown) => {
      warn(
        `[@email-webhooks/bullmq] bullmqSink: ${error instanceof Error ? error.message : String(error)} Every delivery is refused (503) until it does.`,
      )
      // Checked again at the next delivery: the server may be fixed meanwhile.
      checked = undefined
    })
    const ensure = async (): Promise<void> => {
      checked ??= check()
      try {
        await checked
      } catch (error) {
        checked = undefined
        throw error
      }
    }
    ensureDurable = ensure
  }
  return {
    async enqueue(item, { retentionMs }) {
      await ensureDurable?.()
      const jobId = bullmqJobId(item.key)
      const enqueueId = crypto.randomUUID()
      const data: BullmqInboxJobData = { ...item, enqueueId }
      await queue.add(jobName(item), data, {
        ...BULLMQ_JOB_DEFAULTS,
        ...queue.defaultJobOptions,
        ...options.jobOptions,
        jobId,
        removeOnComplete: { age: wholeSeconds(retentionMs) },
      })
      // BullMQ's add answers the same for a new job and for an id it already held (the add was a
      // no-op): the job's data tells which call made it. A job gone already (taken, finished and
      // removed in between) was there, so the event is queued either way.
      const job = await queue.getJob(jobId)
      if (job === undefined || job === null) return 'queued'
      if ((job.data as Partial<BullmqInboxJobData> | undefined)?.enqueueId === enqueueId) return 'queued'
      // A job of the event that used up its attempts (failed) is no record of its handling: the
      // delivery runs it again, from zero attempts, rather than being answered as a duplicate.
      if (await job.isFailed()) {
        await job.retry('failed', { resetAttemptsMade: true })
        return 'queued'
      }
      return 'duplicate'
    },
  }
}
