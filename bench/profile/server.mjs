/**
 * A Hono server on @hono/node-server that answers /hooks with one step of the receiving path
 * more than the variant before it, for attributing server CPU to each step (see README.md here):
 *
 *   bare      the bench's bare baseline: arrayBuffer, then c.json
 *   verify    + verifyWebhook (HMAC-SHA256, header shapes, window)
 *   parse     + parseEnvelope (JSON.parse and envelope checks)
 *   store     + a MemoryDedupStore claim and complete
 *   memory    the Hono adapter with a MemoryDedupStore (what the bench's hono-memory runs)
 *   sqlite    the Hono adapter with the default durable SQLite store (EMAIL_WEBHOOKS_DB or a temporary file)
 *   sqlite-inbox      the same in mode: 'inbox', its worker in this process
 *   sqlite-inbox-web  the same with inbox: { worker: false } (the web tier alone)
 *   hand      the bench's hand-written receiver with a Map (../src/hand: what hono-memory is measured against)
 *   hand-sqlite  the hand-written receiver with SQLite group commit (what hono-sqlite is measured against)
 *
 * Prints its port on stdout; on SIGINT prints CPU µs per request (user and kernel) since SIGUSR2
 * (or since start) on stderr and exits. CONSOLE_EVERY_MS=<ms> (the sqlite variants): an operator
 * in this process opens the console's overview (`emailWebhookConsole` over the route's receiver)
 * every <ms>, one at a time, for the answers' latency while pages are made (console-load.sh).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryDedupStore, parseEnvelope, verifyWebhook } from '@email-webhooks/core'
import { emailWebhook, emailWebhookConsole } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { memoryDedup, sqliteDedup } from '../src/hand/dedup.js'
import { honoHandRoute } from '../src/hand/routes.js'
import { BENCH_SECRET } from '../src/payloads.js'
import { installStats } from './stats.mjs'

// STATS=1: the event loop's delay, the WAL syncs and slow statements on SIGINT (stats.mjs).
const stats = process.env.STATS ? installStats() : undefined

const OK = '{"ok":true}'
const JSON_HEADERS = { 'content-type': 'application/json' }
const RETENTION = { retentionMs: 86_400_000 }
const headersOf = (c) => ({ get: (name) => c.req.header(name) ?? null })
const handlers = { 'email.queued': async () => {} }
const store = new MemoryDedupStore()

async function verified(c) {
  const body = await c.req.arrayBuffer()
  return { body, ...(await verifyWebhook({ headers: headersOf(c), body, secret: BENCH_SECRET })) }
}

/** The Hono adapter with the default durable SQLite store (EMAIL_WEBHOOKS_DB or a temporary file) and `options`. */
function sqliteRoute(options) {
  process.env.EMAIL_WEBHOOKS_DB ??= join(mkdtempSync(join(tmpdir(), 'email-webhooks-profile-')), 'dedup.db')
  // stdout carries only the port: the store's start-up line (logger.info) goes to stderr.
  return emailWebhook(BENCH_SECRET, handlers, { logger: { info: console.error, warn: console.warn, error: console.error }, ...options })
}

const variants = {
  bare: async (c) => {
    const body = await c.req.arrayBuffer()
    return c.json({ ok: true, bytes: body.byteLength })
  },
  verify: async (c) => {
    await verified(c)
    return c.body(OK, 200, JSON_HEADERS)
  },
  parse: async (c) => {
    const { body, id } = await verified(c)
    parseEnvelope(body, id)
    return c.body(OK, 200, JSON_HEADERS)
  },
  store: async (c) => {
    const { body, id } = await verified(c)
    parseEnvelope(body, id)
    const claimed = await store.claim(`profile:${id}`, { leaseMs: 30_000, ...RETENTION })
    await store.complete(claimed.claim, RETENTION)
    return c.body(OK, 200, JSON_HEADERS)
  },
  memory: () => emailWebhook(BENCH_SECRET, handlers, { store: new MemoryDedupStore() }),
  sqlite: () => sqliteRoute({}),
  'sqlite-inbox': () => sqliteRoute({ mode: 'inbox' }),
  'sqlite-inbox-web': () => sqliteRoute({ mode: 'inbox', inbox: { worker: false } }),
  hand: () => honoHandRoute({ secret: BENCH_SECRET, handlers, dedup: memoryDedup() }),
  'hand-sqlite': async () => {
    const path = process.env.EMAIL_WEBHOOKS_DB ?? join(mkdtempSync(join(tmpdir(), 'email-webhooks-profile-')), 'hand.db')
    return honoHandRoute({ secret: BENCH_SECRET, handlers, dedup: await sqliteDedup({ path }) })
  },
}
const variant = process.argv[2]
if (!(variant in variants)) {
  console.error(`usage: node server.mjs <${Object.keys(variants).join('|')}>`)
  process.exit(2)
}
const app = new Hono()
const handler = variants[variant]
const route = handler.length === 0 ? await handler() : handler
app.post('/hooks', route)
const consoleEveryMs = Number(process.env.CONSOLE_EVERY_MS ?? 0)
let pages = 0
// The overview being made, if any: SIGINT waits for it (at most 20 s) so that one begun during the
// load is counted even when a loaded machine makes it slower than the load's run.
let overview = Promise.resolve()
if (consoleEveryMs > 0) {
  const auth = { username: 'ops', password: 'profile-console-password' }
  app.all('/console/*', emailWebhookConsole({ receiver: route, auth, basePath: '/console' }))
  const request = () =>
    new Request('http://profile/console/', { headers: { authorization: `Basic ${btoa(`${auth.username}:${auth.password}`)}` } })
  const open = () => {
    overview = (async () => {
      const response = await app.fetch(request())
      const text = await response.text()
      if (response.status !== 200 || text.includes('did not answer')) console.error(`console: ${response.status} ${text.slice(0, 200)}`)
      pages++
      setTimeout(open, consoleEveryMs).unref()
    })()
  }
  setTimeout(open, consoleEveryMs).unref()
}
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => console.log(info.port))
let requests = 0
server.on('request', () => requests++)
// SIGUSR2 (cpu.sh sends it after the warm-up) starts the measured window; without it the window
// starts at process start. (SIGUSR1 would start Node's inspector.)
let mark = { cpu: { user: 0, system: 0 }, requests: 0 }
process.on('SIGUSR2', () => {
  mark = { cpu: process.cpuUsage(), requests }
  stats?.reset()
})
process.on('SIGINT', async () => {
  const { user, system } = process.cpuUsage(mark.cpu)
  await Promise.race([overview, new Promise((resolve) => setTimeout(resolve, 20_000).unref())])
  const counted = requests - mark.requests
  const per = (us) => (us / counted).toFixed(1)
  console.error(
    `${variant.padEnd(7)} ${counted} requests, CPU µs/request ${per(user + system)} (user ${per(user)}, kernel ${per(system)})${consoleEveryMs > 0 ? `, ${pages} console overviews` : ''}`,
  )
  stats?.report(counted)
  process.exit(0)
})
