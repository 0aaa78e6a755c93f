// Inbox mode with pg-boss. The web process verifies each delivery and answers 200 once its job is
// committed (the job id is derived from the event id, so a redelivery makes no second job); worker
// processes run the handlers, once per event, pg-boss retrying what throws. Both sides use the same
// PostgreSQL for the queue and the dedup store.
import { createInboxProcessor, type EmailEventHandlers } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { emailWebhook } from '@email-webhooks/hono'
import { pgBossSink, pgBossWork } from '@email-webhooks/pg-boss'
import { Hono } from 'hono'
import PgBoss from 'pg-boss'

const QUEUE = 'email-webhooks'

async function startBoss(databaseUrl: string): Promise<PgBoss> {
  const boss = new PgBoss(databaseUrl)
  boss.on('error', (error) => console.error('pg-boss:', error))
  await boss.start()
  await boss.createQueue(QUEUE) // once; does nothing when the queue exists
  return boss
}

/** The web process: POST /hooks verifies each delivery and queues it. */
export async function createWebApp(secret: string, databaseUrl: string) {
  const boss = await startBoss(databaseUrl)
  const store = new PostgresDedupStore({ connectionString: databaseUrl })
  const app = new Hono()
  app.post('/hooks', emailWebhook(secret, {}, { mode: 'inbox', inbox: { sink: pgBossSink(boss, QUEUE) }, store }))
  return { app, close: () => Promise.all([boss.stop({ graceful: false }), store.close()]) }
}

/** A worker process: runs the handlers of the queued events. */
export async function startWorker(databaseUrl: string, handlers: EmailEventHandlers) {
  const boss = await startBoss(databaseUrl)
  const store = new PostgresDedupStore({ connectionString: databaseUrl })
  await pgBossWork(boss, QUEUE, createInboxProcessor({ handlers, store }))
  return { close: () => Promise.all([boss.stop({ graceful: false }), store.close()]) }
}
