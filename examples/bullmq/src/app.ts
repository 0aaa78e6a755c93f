// Inbox mode with BullMQ. The web process verifies each delivery and answers 200 once its job is in
// Redis (the event id is the job id, so a redelivery makes no second job); worker processes run the
// handlers, once per event, BullMQ retrying what throws. Both sides use the same dedup store and queue.
import { bullmqProcessor, bullmqSink } from '@email-webhooks/bullmq'
import { createInboxProcessor, type EmailEventHandlers } from '@email-webhooks/core'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { emailWebhook } from '@email-webhooks/express'
import { Queue, Worker } from 'bullmq'
import express, { type Express } from 'express'

const QUEUE = 'email-webhooks'

/** The web process: POST /hooks verifies each delivery and queues it. */
export function createWebApp(secret: string, redisUrl: string): { app: Express; close: () => Promise<unknown> } {
  // No offline queue: while Redis is unreachable a delivery is answered 503 at once, and retried by the sender.
  const queue = new Queue(QUEUE, { connection: { url: redisUrl, enableOfflineQueue: false } })
  const store = new RedisDedupStore({ url: redisUrl })
  const app = express()
  app.post('/hooks', emailWebhook(secret, {}, { mode: 'inbox', inbox: { sink: bullmqSink(queue) }, store }))
  return { app, close: () => Promise.all([queue.close(), store.close()]) }
}

/** A worker process: runs the handlers of the queued events. */
export function startWorker(redisUrl: string, handlers: EmailEventHandlers) {
  const store = new RedisDedupStore({ url: redisUrl })
  const processor = createInboxProcessor({ handlers, store })
  const worker = new Worker(QUEUE, bullmqProcessor(processor), {
    connection: { url: redisUrl, maxRetriesPerRequest: null },
    concurrency: 4,
  })
  return { worker, close: () => Promise.all([worker.close(), store.close()]) }
}
