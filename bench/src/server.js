/**
 * One HTTP server under test, in its own process: `node server.js <framework> <mode>` with an IPC
 * channel. Sends `{ type: 'ready', port }` once listening; answers `{ type: 'mark' }` with its
 * `process.cpuUsage()` (all threads), the requests it received and the handler runs, so the parent
 * can compute CPU µs per request over a round without timing anything here; exits on `stop` or
 * when the parent goes away.
 *
 * Modes: `bare` is the framework answering 200 after reading the raw body; `memory` is our
 * adapter with `new MemoryDedupStore()`; `sqlite` is our adapter with the default store (Node:
 * a SQLite file at EMAIL_WEBHOOKS_DB). Only the packages' public API is used.
 */
import { MemoryDedupStore } from '@email-webhooks/core'
import { BENCH_SECRET } from './payloads.js'

const [framework, mode] = process.argv.slice(2)
if (!['express', 'hono'].includes(framework) || !['bare', 'sqlite', 'memory'].includes(mode) || !process.send) {
  console.error(`usage: node server.js <express|hono> <bare|memory|sqlite> (with an IPC channel); got "${framework} ${mode}"`)
  process.exit(2)
}
let requests = 0
let handled = 0
const handlers = {
  'email.queued': async () => {
    handled++
  },
}
const options = mode === 'memory' ? { store: new MemoryDedupStore() } : {}

let server
if (framework === 'express') {
  // Only the framework under test is loaded: servers start faster.
  const { default: express } = await import('express')
  const { emailWebhook: expressWebhook } = await import('@email-webhooks/express')
  const app = express()
  if (mode === 'bare') {
    app.post('/hooks', express.raw({ type: '*/*', limit: '1mb' }), (req, res) => {
      handled++
      res.status(200).json({ ok: true, bytes: req.body.length })
    })
  } else {
    app.post('/hooks', expressWebhook(BENCH_SECRET, handlers, options))
  }
  server = app.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }))
} else {
  const { Hono } = await import('hono')
  const { serve } = await import('@hono/node-server')
  const { emailWebhook: honoWebhook } = await import('@email-webhooks/hono')
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
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => process.send({ type: 'ready', port: info.port }))
}
// One counter on the HTTP server itself, the same for every variant.
server.on('request', () => {
  requests++
})

process.on('message', (message) => {
  if (message?.type === 'mark') process.send({ type: 'mark', cpu: process.cpuUsage(), requests, handled })
  // Exit at once so open keep-alive sockets do not hold the process; every acknowledged event's
  // record is already committed.
  else if (message?.type === 'stop') process.exit(0)
})
process.on('disconnect', () => process.exit(0))
