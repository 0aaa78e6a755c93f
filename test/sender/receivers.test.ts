/**
 * "My receiver survives the sender": both examples and both adapters, on real stores (SQLite,
 * memory, Redis, PostgreSQL), run the recovery scenario against the faithful sender over real
 * HTTP on 127.0.0.1.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type DedupStore, MemoryDedupStore } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { getRequestListener } from '@hono/node-server'
import express from 'express'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { sharedPostgresAndRedis, type TestServer } from '../services/servers.js'
import { bounceHandler, runRecoveryScenario } from './recovery-scenario.js'

// The examples are plain JavaScript without declarations: imported by path, typed here.
const EXPRESS_EXAMPLE = '../../examples/express/src/app.js'
const HONO_EXAMPLE = '../../examples/hono-node/src/app.js'
type Action = (emailId: string) => unknown
const { createApp: createExpressExample } = (await import(EXPRESS_EXAMPLE)) as {
  createApp(options: { secret: string; actions: { markBounced: Action; suppress: Action; markDelivered: Action } }): express.Express
}
const { createApp: createHonoExample } = (await import(HONO_EXAMPLE)) as {
  createApp(options: { secret: string; store?: DedupStore; markBounced: Action }): Hono
}

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-sender-'))
let redis: TestServer | undefined
let postgres: TestServer | undefined
beforeAll(async () => {
  ;({ redis, postgres } = await sharedPostgresAndRedis())
})
afterAll(async () => {
  await Promise.all([redis?.stop(), postgres?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

describe('recovery after the endpoint was disabled: every event handled exactly once', () => {
  it('examples/express (default SQLite store from EMAIL_WEBHOOKS_DB)', async () => {
    const path = join(dir, 'express-example.db')
    process.env.EMAIL_WEBHOOKS_DB = path
    let store: SqliteDedupStore | undefined
    await runRecoveryScenario((secret, log) => {
      const markBounced = bounceHandler(log)
      const app = createExpressExample({ secret, actions: { markBounced, suppress: () => {}, markDelivered: () => {} } })
      // A second connection to the example's SQLite file, for recoverEndpoint's lookups.
      store = new SqliteDedupStore({ path })
      return { listener: app, recoveryStore: store, close: () => store?.close() }
    })
  })

  it('examples/hono-node (SQLite store)', async () => {
    const store = new SqliteDedupStore({ path: join(dir, 'hono-example.db') })
    await runRecoveryScenario((secret, log) => {
      const app = createHonoExample({ secret, store, markBounced: bounceHandler(log) })
      return { listener: getRequestListener(app.fetch), recoveryStore: store, close: () => store.close() }
    })
  })

  it('@email-webhooks/express with the memory store (lookup skips handled events)', async () => {
    const store = new MemoryDedupStore()
    await runRecoveryScenario((secret, log) => {
      const markBounced = bounceHandler(log)
      const app = express()
      app.post('/hooks', expressWebhook(secret, { 'email.bounced': async (event) => markBounced(event.data.id) }, { store }))
      return { listener: app, recoveryStore: store }
    })
  })

  it('@email-webhooks/hono with the Redis store', async () => {
    const store = new RedisDedupStore({ url: redis?.url as string, prefix: `sender-${crypto.randomUUID()}:` })
    await runRecoveryScenario((secret, log) => {
      const markBounced = bounceHandler(log)
      const app = new Hono()
      app.post('/hooks', honoWebhook(secret, { 'email.bounced': async (event) => markBounced(event.data.id) }, { store }))
      return { listener: getRequestListener(app.fetch), recoveryStore: store, close: () => store.close() }
    })
  })

  it('@email-webhooks/express with the PostgreSQL store', async () => {
    const table = `sender_${crypto.randomUUID().replaceAll('-', '')}`
    const store = new PostgresDedupStore({ connectionString: postgres?.url as string, table })
    await runRecoveryScenario((secret, log) => {
      const markBounced = bounceHandler(log)
      const app = express()
      app.post('/hooks', expressWebhook(secret, { 'email.bounced': async (event) => markBounced(event.data.id) }, { store }))
      return { listener: app, recoveryStore: store, close: () => store.close() }
    })
  })

  it('a receiver whose store cannot look events up is still recovered exactly once', async () => {
    const memory = new MemoryDedupStore()
    const store = { claim: memory.claim.bind(memory), complete: memory.complete.bind(memory), release: memory.release.bind(memory) }
    await runRecoveryScenario((secret, log) => {
      const markBounced = bounceHandler(log)
      const app = new Hono()
      app.post('/hooks', honoWebhook(secret, { 'email.bounced': async (event) => markBounced(event.data.id) }, { store }))
      return { listener: getRequestListener(app.fetch), recoveryStore: store }
    })
  })
})
