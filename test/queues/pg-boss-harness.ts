/**
 * The pg-boss tests' harness, against a real PostgreSQL 15: a Hono app on 127.0.0.1 (through
 * @hono/node-server) in inbox mode hands signed deliveries to a pg-boss queue through `pgBossSink`,
 * and `pgBossWork` runs them with `createInboxProcessor(…)` over a SQLite dedup store. The receiver's
 * PgBoss reaches PostgreSQL through a TCP proxy, so the queue can go down for it alone.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInboxProcessor, type EmailEventHandlers } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/hono'
import { type PgBossLike, type PgBossSinkOptions, pgBossSink, pgBossWork } from '@email-webhooks/pg-boss'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import PgBoss from 'pg-boss'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { sharedPostgres, type TestServer } from '../services/servers.js'
import { startTcpProxy, type TcpProxy } from './support.js'

/** Registers the file's hooks (PostgreSQL, the proxy and the worker's PgBoss for the file, apps per test). */
export function pgBossHarness() {
  let postgres: TestServer
  let proxy: TcpProxy
  let workerBoss: PgBoss
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-pg-boss-'))
  const cleanups: (() => Promise<unknown> | undefined)[] = []
  let queueCount = 0

  const newBoss = (port: number) => {
    const url = new URL(postgres.url)
    url.port = String(port)
    const boss = new PgBoss({ connectionString: url.href, supervise: false, schedule: false, max: 4 })
    boss.on('error', () => {}) // the proxy cuts the receiver's connections on purpose
    return boss
  }

  beforeAll(async () => {
    postgres = await sharedPostgres()
    proxy = await startTcpProxy(postgres.port)
    workerBoss = newBoss(postgres.port)
    await workerBoss.start()
  })
  afterEach(async () => {
    proxy.up()
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })
  afterAll(async () => {
    await workerBoss?.stop({ graceful: false, timeout: 2_000 })
    await proxy?.close()
    await postgres?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  /**
   * A queue, the receiver's PgBoss (through the proxy), a store, and a Hono app on 127.0.0.1 with
   * the sink; the receiver's storeTimeoutMs is 1 s unless given.
   */
  async function setup(
    options: { sink?: PgBossSinkOptions; createQueue?: boolean; wrap?: (boss: PgBoss) => PgBossLike; storeTimeoutMs?: number } = {},
  ) {
    const name = `hooks-${++queueCount}`
    if (options.createQueue !== false) await workerBoss.createQueue(name)
    const boss = newBoss(proxy.port)
    await boss.start()
    cleanups.push(() => boss.stop({ graceful: false, timeout: 2_000 }))
    const store = new SqliteDedupStore({ path: join(dir, `${name}.db`) })
    cleanups.push(() => store.close())
    const sink = pgBossSink(options.wrap ? options.wrap(boss) : boss, name, options.sink)
    const app = new Hono()
    app.post(
      '/hooks',
      emailWebhook(
        TEST_SECRET,
        {},
        { mode: 'inbox', inbox: { sink }, store, storeTimeoutMs: options.storeTimeoutMs ?? 1_000, logger: false },
      ),
    )
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
    })
    cleanups.push(() => new Promise((resolve) => server.close(resolve)))
    return { name, boss: workerBoss, store, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` }
  }

  /** `pgBossWork` on the queue (straight to PostgreSQL) over `store`; `wrap` may add to each job's run. */
  async function startWorker(
    name: string,
    store: SqliteDedupStore,
    handlers: EmailEventHandlers,
    wrap?: (run: () => Promise<'handled' | 'duplicate'>, attempt: number) => Promise<'handled' | 'duplicate'>,
  ) {
    const processor = createInboxProcessor({ handlers, store, logger: false })
    const attempts = new Map<string, number>()
    const wrapped = {
      process: (item: Parameters<typeof processor.process>[0]) => {
        const attempt = (attempts.get(item.key) ?? 0) + 1
        attempts.set(item.key, attempt)
        return wrap ? wrap(() => processor.process(item), attempt) : processor.process(item)
      },
    }
    const id = await pgBossWork(workerBoss, name, wrapped, { pollingIntervalSeconds: 0.5 })
    cleanups.push(() => workerBoss.offWork({ id }))
  }

  return { setup, startWorker, proxy: () => proxy }
}
