/**
 * `pgBossSink(boss, queueName)`: the `inbox.sink` of an inbox-mode receiver that hands each verified
 * event to a pg-boss queue under a job id derived from the event's dedup key (a name-based UUID):
 * pg-boss inserts a job with `ON CONFLICT DO NOTHING` on its primary key (queue name, id), so a
 * redelivery finds the job there and makes no second one, in every state, until the job is archived.
 */
import { createHash } from 'node:crypto'
import type { InboxItem, InboxSink } from '@email-webhooks/core'
import type PgBoss from 'pg-boss'

/** Send options the sink leaves to you (`id` is its own; retention is given in seconds only). */
export type PgBossSinkSendOptions = Omit<
  PgBoss.SendOptions,
  | 'id'
  | 'singletonKey'
  | 'singletonSeconds'
  | 'singletonMinutes'
  | 'singletonHours'
  | 'singletonNextSlot'
  | 'retentionMinutes'
  | 'retentionHours'
  | 'retentionDays'
>

/** Options of {@link pgBossSink}. */
export interface PgBossSinkOptions {
  /**
   * pg-boss send options but `id`, the `singleton*` options and retention other than
   * `retentionSeconds`, merged over `PG_BOSS_JOB_DEFAULTS`; a job's own options win over its
   * queue's, so set retries here.
   */
  sendOptions?: PgBossSinkSendOptions
}

/** The boss, as far as the sink uses it (a started `PgBoss`). */
export type PgBossLike = Pick<PgBoss, 'send' | 'getJobById' | 'retry'>

/** pg-boss's own default for how long a job may wait (created or retry) before it is archived unrun: 14 days. */
const PG_BOSS_DEFAULT_RETENTION_SECONDS = 14 * 24 * 3600

/**
 * Retries of the sink's jobs unless `sendOptions` says otherwise: 10 retries, exponential backoff from
 * 1 s with pg-boss's jitter (each delay drawn between half and all of 2^n s). A job that used them all
 * is `failed` (or goes to your `deadLetter` queue).
 */
export const PG_BOSS_JOB_DEFAULTS: Readonly<PgBossSinkSendOptions> = Object.freeze({
  retryLimit: 10,
  retryDelay: 1,
  retryBackoff: true,
})

/** A fixed namespace for the name-based UUIDs of {@link pgBossJobId}. */
const ID_NAMESPACE = Buffer.from('0627b901e0684cf1b12a673eb7dd2265', 'hex')

/**
 * The pg-boss job id of a dedup key (`namespace:webhook-id`): the RFC 9562 version 5 UUID of the key
 * (SHA-1 over a fixed namespace and the key's UTF-8 bytes). Deterministic: every delivery of an event
 * gets the same id.
 */
export function pgBossJobId(key: string): string {
  const hash = createHash('sha1').update(ID_NAMESPACE).update(key, 'utf8').digest()
  hash[6] = ((hash[6] as number) & 0x0f) | 0x50
  hash[8] = ((hash[8] as number) & 0x3f) | 0x80
  const hex = hash.subarray(0, 16).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * An `InboxSink` over a pg-boss queue (created beforehand with `boss.createQueue(queueName)`).
 * `enqueue` resolves once PostgreSQL committed the job: `'queued'` when this call inserted it (or
 * sent a failed job of the event back to retry), `'duplicate'` when a job with the event's id was
 * already there. A job waits at most
 * `retentionSeconds` (at least `retentionMs`, 14 days by default) before pg-boss gives it up.
 * @param boss A started `PgBoss`.
 * @param queueName The queue your workers take from.
 * @param options Send options (retries, priority, `deadLetter`, `expireInSeconds`…).
 * @throws {TypeError} when `boss` is not a PgBoss or `queueName` is empty.
 * @example
 * await boss.createQueue('email-webhooks')
 * app.post('/hooks', emailWebhook(secret, {}, { mode: 'inbox', inbox: { sink: pgBossSink(boss, 'email-webhooks') }, store }))
 */
export function pgBossSink(boss: PgBossLike, queueName: string, options: PgBossSinkOptions = {}): InboxSink {
  if (
    boss === null ||
    typeof boss !== 'object' ||
    typeof boss.send !== 'function' ||
    typeof boss.getJobById !== 'function' ||
    typeof boss.retry !== 'function'
  ) {
    throw new TypeError('@email-webhooks/pg-boss: pgBossSink needs a started PgBoss (new PgBoss(url), then await boss.start()).')
  }
  if (typeof queueName !== 'string' || queueName.length === 0) {
    throw new TypeError('@email-webhooks/pg-boss: pgBossSink needs the queue name (created with boss.createQueue(name)).')
  }
  const { sendOptions = {} } = options
  return {
    async enqueue(item: InboxItem, { retentionMs }) {
      const id = pgBossJobId(item.key)
      const retentionSeconds = Math.max(Math.ceil(retentionMs / 1000), sendOptions.retentionSeconds ?? PG_BOSS_DEFAULT_RETENTION_SECONDS)
      const sent = await boss.send(queueName, item, { ...PG_BOSS_JOB_DEFAULTS, ...sendOptions, id, retentionSeconds })
      if (sent !== null) return 'queued'
      // No row inserted: a job with this id is there (a duplicate), or the queue does not exist
      // (pg-boss inserts only into a known queue and answers null alike). Tell them apart.
      const existing = await boss.getJobById(queueName, id, { includeArchive: true })
      // A job of the event that used up its retries (failed) is no record of its handling: the
      // delivery runs it again (pg-boss's retry gives it one more) rather than being a duplicate.
      if (existing?.state === 'failed') {
        await boss.retry(queueName, id)
        return 'queued'
      }
      if (existing !== null && existing !== undefined) return 'duplicate'
      throw new Error(
        `@email-webhooks/pg-boss: pg-boss did not queue the job of ${item.type} and holds none with its id: does the queue "${queueName}" exist? Create it once with boss.createQueue("${queueName}").`,
      )
    },
  }
}
