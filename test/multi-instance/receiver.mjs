// One receiver instance for many-instances.test.ts: an Express or Hono (@hono/node-server) app
// on 127.0.0.1 with a PostgreSQL or Redis dedup store shared with the other instances. Every
// handler run is appended to <log> before the handler's work, so a run is on disk even if the
// process is killed right after. Reports { type: 'ready', port } over IPC; exits by itself
// after 120 s at most, so a failed test never leaves it running.
//   receiver.mjs <express|hono> <postgres|redis> <url> <log> <leaseMs>
import { appendFileSync } from 'node:fs'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import express from 'express'
import { Hono } from 'hono'

const [framework, kind, url, log, leaseMs] = process.argv.slice(2)
setTimeout(() => process.exit(3), 120_000).unref()

const store = kind === 'postgres' ? new PostgresDedupStore({ connectionString: url }) : new RedisDedupStore({ url })
const handlers = {
  'email.bounced': async (event) => {
    appendFileSync(log, `${event.id}\n`)
    process.send({ type: 'running', id: event.id })
    // 5-15 ms of work after the record, so that a kill can land between the run and its complete().
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.floor(Math.random() * 10)))
  },
}
const options = { store, leaseMs: Number(leaseMs) }

if (framework === 'express') {
  const app = express()
  app.post('/hooks', expressWebhook(TEST_SECRET, handlers, options))
  const server = app.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }))
} else {
  const app = new Hono()
  app.post('/hooks', honoWebhook(TEST_SECRET, handlers, options))
  serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => process.send({ type: 'ready', port: info.port }))
}
