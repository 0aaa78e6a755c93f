/**
 * The BullMQ tests' harness, against a real Redis 7 (appendfsync always): an Express app on 127.0.0.1
 * in inbox mode hands signed deliveries to a BullMQ queue through `bullmqSink`, and a BullMQ Worker
 * runs them with `bullmqProcessor(createInboxProcessor(…))` over a SQLite dedup store. The receiver
 * reaches Redis through a TCP proxy, so the queue can go down for it alone.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BullmqQueueLike, type BullmqSinkOptions, bullmqProcessor, bullmqSink } from '@email-webhooks/bullmq'
import { createInboxProcessor, type EmailEventHandlers } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/express'
import { Queue, Worker } from 'bullmq'
import express from 'express'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { type RunningServer, startRedis } from '../services/servers.js'
import { startTcpProxy, type TcpProxy } from './support.js'

/** Registers the file's hooks (Redis and the proxy for the file, apps and workers per test). */
export function bullmqHarness() {
  let redis: RunningServer
  let proxy: TcpProxy
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bullmq-'))
  const cleanups: (() => Promise<unknown> | undefined)[] = []
  let queueCount = 0

  beforeAll(async () => {
    redis = await startRedis()
    proxy = await startTcpProxy(redis.port)
  })
  afterEach(async () => {
    proxy.up()
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })
  afterAll(async () => {
    await proxy?.close()
    await redis?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const direct = () => ({ host: '127.0.0.1', port: redis.port, password: redis.password })

  /**
   * A queue (through the proxy, as the receiver sees it), a store, and an Express app on 127.0.0.1
   * with the sink; the receiver's storeTimeoutMs is 1 s unless given.
   */
  async function setup(sinkOptions: BullmqSinkOptions = {}, wrap?: (queue: Queue) => BullmqQueueLike, storeTimeoutMs = 1_000) {
    const name = `hooks-${++queueCount}`
    const queue = new Queue(name, { connection: { ...direct(), port: proxy.port, maxRetriesPerRequest: 1 } })
    queue.on('error', () => {}) // the proxy cuts it on purpose
    const store = new SqliteDedupStore({ path: join(dir, `${name}.db`) })
    const app = express()
    const sink = bullmqSink(wrap ? wrap(queue) : queue, sinkOptions)
    app.post('/hooks', emailWebhook(TEST_SECRET, {}, { mode: 'inbox', inbox: { sink }, store, storeTimeoutMs, logger: false }))
    const server: Server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    cleanups.push(() => store.close())
    cleanups.push(() => queue.close())
    cleanups.push(() => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(resolve))
    })
    return { name, queue, store, db: join(dir, `${name}.db`), url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` }
  }

  /** A Worker on the queue (straight to Redis) running the processor over `store`; `wrap` may add to each job's run. */
  function startWorker(
    name: string,
    store: SqliteDedupStore,
    handlers: EmailEventHandlers,
    wrap?: (run: () => Promise<string>, attempt: number) => Promise<string>,
    workerOptions: { lockDuration?: number; stalledInterval?: number } = {},
  ) {
    const run = bullmqProcessor(createInboxProcessor({ handlers, store, logger: false }))
    const worker = new Worker(name, (job, token) => (wrap ? wrap(() => run(job, token), job.attemptsMade + 1) : run(job, token)), {
      connection: direct(),
      concurrency: 2,
      ...workerOptions,
    })
    cleanups.push(() => worker.close())
    return worker
  }

  return { setup, startWorker, proxy: () => proxy, redis: direct }
}
