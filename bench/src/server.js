/**
 * One HTTP server under test, in its own process: `node server.js <framework> <mode>` with an IPC
 * channel. Sends `{ type: 'ready', port }` once listening; answers `{ type: 'mark' }` with its
 * `process.cpuUsage()` (all threads), the requests it received and the handler runs, so the parent
 * can compute CPU µs per request over a round without timing anything here; exits on `stop` or
 * when the parent goes away.
 *
 * Modes: `bare` is the framework answering 200 after reading the raw body (Express: express.raw and
 * res.json); `lean` (Express only) reads the body by hand and answers with res.end; `memory` is our
 * adapter with `new MemoryDedupStore()`; `sqlite` is our adapter with the default store (Node:
 * a SQLite file at EMAIL_WEBHOOKS_DB); `memory-ordered` and `sqlite-ordered` are the same with
 * `ordering: true`. Only the packages' public API is used.
 */
import { MemoryDedupStore } from '@email-webhooks/core'
import { BENCH_SECRET } from './payloads.js'

const [framework, mode] = process.argv.slice(2)
if (
  !['express', 'hono'].includes(framework) ||
  !['bare', 'lean', 'sqlite', 'memory', 'sqlite-ordered', 'memory-ordered'].includes(mode) ||
  (mode === 'lean' && framework !== 'express') ||
  !process.send
) {
  console.error(
    `usage: node server.js <express|hono> <bare|memory|sqlite> (or express lean) (with an IPC channel); got "${framework} ${mode}"`,
  )
  process.exit(2)
}
let requests = 0
let handled = 0
const handlers = {
  'email.queued': async () => {
    handled++
  },
}
const options = {
  ...(mode.startsWith('memory') ? { store: new MemoryDedupStore() } : {}),
  ...(mode.endsWith('-ordered') ? { ordering: true } : {}),
}

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
  } else if (mode === 'lean') {
    // The leanest Express route: the body read by hand, the answer written as our adapter writes it.
    app.post('/hooks', (req, res) => {
      let bytes = 0
      req.on('data', (chunk) => {
        bytes += chunk.length
      })
      req.on('end', () => {
        handled++
        res.statusCode = 200
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify({ ok: true, bytes }))
      })
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
