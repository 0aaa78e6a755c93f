// A receiver process for soak.test.ts and faults.test.ts: Express 5 or Hono on
// @hono/node-server on 127.0.0.1 with the SQLite dedup store. Every handler run is journaled
// with synchronous appends (which survive kill -9): "B <tag> <id> <attempt>" when it starts and
// "E <tag> <id>" when it ends. Talks to the parent over IPC; exits when the parent goes away
// and after <lifetimeMs> at most, so a failed test never leaves it running.
//   node receiver-child.mjs <express|hono> <db> <journal> <tag> <port> <leaseMs> <maxHandlerDelayMs> <lifetimeMs>
import { appendFileSync } from 'node:fs'
import { EMAIL_EVENT_TYPES } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import express from 'express'
import { Hono } from 'hono'

const [adapter, db, journal, tag, port, leaseMs, maxDelay, lifetime] = process.argv.slice(2)
setTimeout(() => process.exit(3), Number(lifetime)).unref()
process.on('disconnect', () => process.exit(0))

const store = new SqliteDedupStore({ path: db })
const delay = Number(maxDelay)
async function handle(event, ctx) {
  appendFileSync(journal, `B ${tag} ${event.id} ${ctx.attempt}\n`)
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * delay)))
  appendFileSync(journal, `E ${tag} ${event.id}\n`)
}
const handlers = Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, handle]))
const options = { store, leaseMs: Number(leaseMs), onUnknown: handle }

let server
if (adapter === 'express') {
  const app = express()
  app.post('/hooks', expressWebhook(TEST_SECRET, handlers, options))
  server = app.listen(Number(port), '127.0.0.1')
} else {
  const app = new Hono()
  app.post('/hooks', honoWebhook(TEST_SECRET, handlers, options))
  server = serve({ fetch: app.fetch, port: Number(port), hostname: '127.0.0.1' })
}
server.keepAliveTimeout = 30_000
server.once('listening', () => process.send({ type: 'listening', port: server.address().port, rss: process.memoryUsage().rss }))
process.on('message', (message) => {
  if (message === 'rss') {
    globalThis.gc?.()
    process.send({ type: 'rss', rss: process.memoryUsage().rss })
  }
})
