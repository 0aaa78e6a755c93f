/**
 * @email-webhooks/pg-boss: hand verified events to a pg-boss queue from an inbox-mode receiver
 * (`inbox: { sink: pgBossSink(boss, name) }`), and run the jobs with `pgBossWork(boss, name,
 * processor)`. The job id is derived from the event id: a redelivery never makes a second job.
 */
export {
  PG_BOSS_JOB_DEFAULTS,
  type PgBossLike,
  type PgBossSinkOptions,
  type PgBossSinkSendOptions,
  pgBossJobId,
  pgBossSink,
} from './sink.js'
export { type PgBossWorkOptions, pgBossWork } from './work.js'
