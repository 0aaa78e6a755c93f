/**
 * One HTTP server under test, in its own process: `node server.js <framework> <mode>` with an IPC
 * channel. Sends `{ type: 'ready', port }` once listening; answers `{ type: 'mark' }` with its
 * `process.cpuUsage()` (all threads), the requests it received and the handler runs (and, in inbox
 * mode, the entries still waiting), so the parent can compute CPU µs per request over a round
 * without timing anything here; with BENCH_JOURNAL=1 the handler also notes each event id it ran,
 * and `{ type: 'journal' }` answers them (and starts a new list); exits on `stop` or when the parent
 * goes away.
 *
 * Modes (SERVER_MODES): `bare` is the framework answering 200 after reading the raw body (Express:
 * express.raw and res.json); `lean` (Express only) reads the body by hand and answers with res.end;
 * `memory`, `sqlite`, `postgres` and `redis` are our adapter with `new MemoryDedupStore()`, the
 * default store (Node: a SQLite file at EMAIL_WEBHOOKS_DB), `PostgresDedupStore` (BENCH_POSTGRES_URL)
 * and `RedisDedupStore` (BENCH_REDIS_URL); `memory-ordered` and `sqlite-ordered` the same with
 * `ordering: true`; `memory-otel-off` the memory mode with `telemetry: false` (the other modes find
 * @opentelemetry/api, installed with core, with no SDK registered), `memory-otel-sdk` the memory mode
 * with the OpenTelemetry SDK registered first (otel-sdk.js: spans batched to an exporter that drops
 * them, metrics read every 60 s); `sqlite-inbox` the default store in `mode: 'inbox'` with its worker in this
 * process, `sqlite-inbox-web` the same with `inbox: { worker: false }` (the web tier alone),
 * `postgres-inbox` the PostgreSQL store in `mode: 'inbox'` with its worker in this process;
 * `hand-memory`, `hand-sqlite`, `hand-postgres` and `hand-redis` the hand-written receiver
 * (hand/receiver.js) with that dedup. Only the packages' public API is used.
 */
import { BENCH_SECRET } from './payloads.js'

const SERVER_MODES = [
  'bare',
  'lean',
  'memory',
  'sqlite',
  'postgres',
  'redis',
  'memory-ordered',
  'memory-otel-off',
  'memory-otel-sdk',
  'memory-twin',
  'sqlite-ordered',
  'sqlite-inbox',
  'sqlite-inbox-web',
  'postgres-inbox',
  'hand-memory',
  'hand-sqlite',
  'hand-postgres',
  'hand-redis',
]

let requests = 0
let handled = 0
const journal = process.env.BENCH_JOURNAL === '1' ? [] : undefined
const handlers = {
  'email.queued': async (event) => {
    handled++
    journal?.push(event.id)
  },
}

/** Our adapter's options for a mode. */
async function oursOptions(mode) {
  if (mode.startsWith('memory')) {
    const { MemoryDedupStore } = await import('@email-webhooks/core')
    if (mode === 'memory-otel-sdk') await (await import('./otel-sdk.js')).registerOtelSdk()
    // `memory-twin` is `memory` again, in its own process: the A/A check of the telemetry variant.
    const more = { 'memory-ordered': { ordering: true }, 'memory-otel-off': { telemetry: false } }[mode]
    return { store: new MemoryDedupStore(), ...more }
  }
  if (mode.startsWith('postgres')) {
    const { PostgresDedupStore } = await import('@email-webhooks/core/postgres')
    // BENCH_PG_TABLE: another table than the default (the retained-data bench's filled tables).
    const store = new PostgresDedupStore({ connectionString: process.env.BENCH_POSTGRES_URL, table: process.env.BENCH_PG_TABLE })
    return { store, ...(mode === 'postgres-inbox' ? { mode: 'inbox' } : {}) }
  }
  if (mode === 'redis') {
    const { RedisDedupStore } = await import('@email-webhooks/core/redis')
    // BENCH_REDIS_PREFIX: another key prefix than the default (the retained-data bench's filled keys).
    return { store: new RedisDedupStore({ url: process.env.BENCH_REDIS_URL, prefix: process.env.BENCH_REDIS_PREFIX }) }
  }
  if (mode === 'sqlite-ordered') return { ordering: true }
  if (mode === 'sqlite-inbox') return { mode: 'inbox' }
  if (mode === 'sqlite-inbox-web') return { mode: 'inbox', inbox: { worker: false } }
  return {}
}

async function handOptions(mode) {
  const { openHandDedup } = await import('./hand/dedup.js')
  return { secret: BENCH_SECRET, handlers, dedup: await openHandDedup(mode.slice('hand-'.length)) }
}

/** Express app for `mode`; resolves with its server, listening. */
async function expressServer(mode) {
  // Only the framework under test is loaded: servers start faster.
  const { default: express } = await import('express')
  const app = express()
  let route
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
  } else if (mode.startsWith('hand-')) {
    const { expressHandRoute } = await import('./hand/routes.js')
    app.post('/hooks', ...expressHandRoute(express, await handOptions(mode)))
  } else {
    const { emailWebhook } = await import('@email-webhooks/express')
    route = emailWebhook(BENCH_SECRET, handlers, await oursOptions(mode))
    app.post('/hooks', route)
  }
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port, route }))
  })
}

/** Hono app on @hono/node-server for `mode`; resolves with its server, listening. */
async function honoServer(mode) {
  const { Hono } = await import('hono')
  const { serve } = await import('@hono/node-server')
  const app = new Hono()
  let route
  if (mode === 'bare') {
    app.post('/hooks', async (c) => {
      const body = await c.req.arrayBuffer()
      handled++
      return c.json({ ok: true, bytes: body.byteLength })
    })
  } else if (mode.startsWith('hand-')) {
    const { honoHandRoute } = await import('./hand/routes.js')
    app.post('/hooks', honoHandRoute(await handOptions(mode)))
  } else {
    const { emailWebhook } = await import('@email-webhooks/hono')
    route = emailWebhook(BENCH_SECRET, handlers, await oursOptions(mode))
    app.post('/hooks', route)
  }
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve({ server, port: info.port, route }))
  })
}

const [framework, mode] = process.argv.slice(2)
if (
  !['express', 'hono'].includes(framework) ||
  !SERVER_MODES.includes(mode) ||
  (mode === 'lean' && framework !== 'express') ||
  !process.send
) {
  console.error(
    `usage: node server.js <express|hono> <${SERVER_MODES.join('|')}> (lean: express only) with an IPC channel; got "${framework} ${mode}"`,
  )
  process.exit(2)
}
const { server, port, route } = await (framework === 'express' ? expressServer(mode) : honoServer(mode))
// One counter on the HTTP server itself, the same for every variant.
server.on('request', () => {
  requests++
})
process.send({ type: 'ready', port })

process.on('message', async (message) => {
  if (message?.type === 'mark') {
    const cpu = process.cpuUsage()
    const inbox = route?.inbox ? await route.inbox.stats() : undefined
    process.send({ type: 'mark', cpu, requests, handled, ...(inbox ? { pending: inbox.pending + inbox.running } : {}) })
  } else if (message?.type === 'journal') {
    process.send({ type: 'journal', ids: journal?.splice(0) ?? [] })
  }
  // Exit at once so open keep-alive sockets do not hold the process; every acknowledged event's
  // record is already committed.
  else if (message?.type === 'stop') process.exit(0)
})
process.on('disconnect', () => process.exit(0))
