// One receiver process of the fault suite: Express 5 or Hono (@hono/node-server) on 127.0.0.1
// with a SQLite (the default store, or a file), PostgreSQL or Redis dedup store. Every handler
// run is journaled from here, outside the receiver's own bookkeeping: "B <tag> <id> <attempt>"
// when it starts and "E <tag> <id> <ms since the epoch>" when its work is done, each appended and fsync'd (write(2)
// and fsync(2), never pwrite64 or fdatasync, so the strace faults aimed at the store's WAL leave
// the journal alone), so a run survives kill -9. The handler waits `event.data.slowMs` when the
// event carries it (a handler slower than the sender's timeout), else 5-15 ms.
//
// The receiver's logger lines go to <log> (appended) and to the parent over IPC ({ type: 'log' }).
// It listens once its store has answered a lookup (a readiness check). IPC commands: { cmd: 'clock', offsetMs } moves the receiver's clock (its `now` option),
// { cmd: 'broken', value } makes the handler throw (or work again), { cmd: 'usage' } answers
// { type: 'usage', rss, heapUsed, stats }. It reports { type: 'listening', port } and exits when
// the parent goes away, and after <lifetimeMs> at most, so a failed test never leaves it running.
//   node receiver.mjs '<json config>'
//   config: { adapter, store: { kind: 'default' | 'sqlite' | 'postgres' | 'redis', path?, url? }, journal, log,
//             tag, port, lifetimeMs, stallCompletes?, options: { leaseMs?, handlerTimeoutMs?, storeTimeoutMs?, retentionMs?,
//             ordering?, mode?, inbox? } }
// stallCompletes: n — the store's first n completes never answer (a connection that stalled in the
// middle of the call; the store itself works), as a silent fault the receiver must not wait on;
// stallSlowCompletes: true — the first complete of each slow event (data.slowMs) never answers.
import { appendFileSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { EMAIL_EVENT_TYPES } from '@email-webhooks/core'

const config = JSON.parse(process.argv[2])
setTimeout(() => process.exit(3), config.lifetimeMs ?? 300_000).unref()
process.on('disconnect', () => process.exit(0))
const send = (message) => {
  if (process.connected) process.send(message, undefined, undefined, () => {})
}

const journal = openSync(config.journal, 'a')
function record(line) {
  writeSync(journal, `${line}\n`)
  fsyncSync(journal)
}

function logTo(level) {
  return (line) => {
    try {
      appendFileSync(config.log, `${level} ${line}\n`)
    } catch {}
    send({ type: 'log', level, line })
  }
}

async function openStore(store) {
  if (store.kind === 'default') return undefined // EMAIL_WEBHOOKS_DB, set by the parent
  if (store.kind === 'sqlite') {
    const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')
    return new SqliteDedupStore({ path: store.path })
  }
  if (store.kind === 'postgres') {
    const { PostgresDedupStore } = await import('@email-webhooks/core/postgres')
    return new PostgresDedupStore({ connectionString: store.url })
  }
  const { RedisDedupStore } = await import('@email-webhooks/core/redis')
  return new RedisDedupStore({ url: store.url })
}

let offsetMs = 0
let broken = false
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function handle(event, ctx) {
  if (broken) throw new Error('the application database is unavailable (simulated)')
  // The email (data.id) and where the event came from (the sender, or reconcile with its own id):
  // figures.ts counts runs per email across both.
  const email = typeof event.data?.id === 'string' ? event.data.id : '-'
  const source = ctx.source ?? 'sender'
  record(`B ${config.tag} ${event.id} ${ctx.attempt} ${email} ${source}`)
  const slowMs = event.data?.slowMs
  if (config.stallSlowCompletes && typeof slowMs === 'number' && ctx.attempt === 1) stallKeys.add(`default:${event.id}`)
  await sleep(typeof slowMs === 'number' ? slowMs : 5 + Math.floor(Math.random() * 10))
  record(`E ${config.tag} ${event.id} ${Date.now()} ${email} ${source}`)
}

/** Keys of slow events whose first complete is still to hang (stallSlowCompletes). */
const stallKeys = new Set()

/** The store, with its first `n` completes (and the first of each key in stallKeys) hung forever: they never reach it. */
function stalling(store, n) {
  let left = n
  const complete = store.complete.bind(store)
  store.complete = (claim, ...rest) => {
    if (stallKeys.delete(claim.key)) return new Promise(() => {})
    if (left <= 0) return complete(claim, ...rest)
    left--
    return new Promise(() => {})
  }
  return store
}

const handlers = Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, handle]))
const opened = await openStore(config.store)
const options = {
  store: (config.stallCompletes || config.stallSlowCompletes) && opened ? stalling(opened, config.stallCompletes ?? 0) : opened,
  onUnknown: handle,
  now: () => Date.now() + offsetMs,
  logger: { error: logTo('error'), warn: logTo('warn') },
  ...config.options,
}

// Only the adapter this process runs is loaded: a restart in the kill loop is quicker.
const adapter = config.adapter === 'express' ? await import('@email-webhooks/express') : await import('@email-webhooks/hono')
const webhook = adapter.emailWebhook(config.secret, handlers, options)
// Ready only once the store answers (its pool connected, its table there), as a readiness check would have it.
await webhook
  .store()
  .lookup?.('default:warm-up')
  .catch(() => {})
let server
if (config.adapter === 'express') {
  const { default: express } = await import('express')
  const app = express()
  app.post('/hooks', webhook)
  server = app.listen(config.port ?? 0, '127.0.0.1')
} else {
  const [{ Hono }, { serve }] = await Promise.all([import('hono'), import('@hono/node-server')])
  const app = new Hono()
  app.post('/hooks', webhook)
  server = serve({ fetch: app.fetch, port: config.port ?? 0, hostname: '127.0.0.1' })
}
server.keepAliveTimeout = 30_000
server.once('listening', () => send({ type: 'listening', port: server.address().port, pid: process.pid }))
server.once('error', (error) => {
  send({ type: 'listen-error', message: error.message })
  process.exit(4)
})
process.on('message', (message) => {
  if (message.cmd === 'clock') offsetMs = message.offsetMs
  else if (message.cmd === 'broken') broken = message.value
  else if (message.cmd === 'usage') {
    const { rss, heapUsed } = process.memoryUsage()
    send({ type: 'usage', rss, heapUsed, stats: webhook.stats() })
  }
  if (message.cmd !== 'usage') send({ type: 'done', cmd: message.cmd })
})
