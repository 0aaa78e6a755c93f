/**
 * One HTTP server under test, in its own process: `node server.js <variant>`. Prints
 * `{"port": N}` once listening; on SIGTERM prints `{"handled": N}` to stderr and exits.
 *
 * Variants: express-bare, express-sqlite, express-memory, hono-bare, hono-sqlite, hono-memory.
 * `bare` is the framework with its raw-body parser answering 200; `sqlite` is our adapter with
 * the default durable store (a SQLite file, durability 'full', at EMAIL_WEBHOOKS_DB); `memory`
 * is our adapter with MemoryDedupStore.
 */
import { MemoryDedupStore } from '@email-webhooks/core'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import express from 'express'
import { Hono } from 'hono'
import { BENCH_SECRET } from './payloads.js'

const variant = process.argv[2] ?? ''
const [framework, mode] = variant.split('-')
if (!['express', 'hono'].includes(framework) || !['bare', 'sqlite', 'memory'].includes(mode)) {
  console.error(`unknown variant "${variant}"`)
  process.exit(2)
}
let handled = 0
const handlers = {
  'email.recipient_accepted': async () => {
    handled++
  },
}
const options = mode === 'memory' ? { store: new MemoryDedupStore() } : {}

function report(port) {
  process.stdout.write(`${JSON.stringify({ port })}\n`)
}

let close
if (framework === 'express') {
  const app = express()
  if (mode === 'bare') {
    app.post('/hooks', express.raw({ type: '*/*', limit: '1mb' }), (req, res) => {
      handled++
      res.status(200).json({ ok: true, bytes: req.body.length })
    })
  } else {
    app.post('/hooks', expressWebhook(BENCH_SECRET, handlers, options))
  }
  const server = app.listen(0, '127.0.0.1', () => report(server.address().port))
  close = () => server.close()
} else {
  const app = new Hono()
  if (mode === 'bare') {
    app.post('/hooks', async (c) => {
      const body = await c.req.arrayBuffer()
      handled++
      return c.json({ ok: true, bytes: body.byteLength })
    })
  } else {
    app.post('/hooks', honoWebhook(BENCH_SECRET, handlers, options))
  }
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => report(info.port))
  close = () => server.close()
}

process.on('SIGTERM', () => {
  close()
  process.stderr.write(`${JSON.stringify({ handled })}\n`)
  // Exit now so that open keep-alive sockets do not hold the process; every acknowledged
  // event's complete is already committed.
  process.exit(0)
})
