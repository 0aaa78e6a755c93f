/**
 * The inbox against the queues users would pick instead (issue 48): the same signed events, from
 * the same receiver in `mode: 'inbox'`, recorded (a) in the built-in inbox of the Redis store and
 * handed (b) to BullMQ through `bullmqSink` on the same Redis (`appendfsync always`: every write on
 * disk before Redis answers); recorded (c) in the built-in inbox of the PostgreSQL store and handed
 * (d) to pg-boss through `pgBossSink` on the same PostgreSQL (`synchronous_commit` on). Then each
 * is drained with a no-op handler: the built-in worker (`inbox.start()`), a BullMQ `Worker` running
 * `bullmqProcessor(createInboxProcessor(…))`, `pgBossWork(…)` — each deduplicating through the same
 * store, so every event's done record is as durable as in the built-in inbox — at the same
 * concurrency. For information also the bare queue: a BullMQ Worker and a pg-boss worker whose job
 * function does nothing (no dedup, no done record). One process, unpinned (as bench/src/inbox.js);
 * events per second, this process's CPU per event and the database server's (/proc, all its
 * processes). Not a test: the figures go to bench/RESULTS.md ("Inbox against BullMQ and pg-boss").
 *
 *   node bench/src/queues.js                       5,000 events each, concurrency 4; writes bench/RESULTS.md
 *   node bench/src/queues.js --events 200 --out /tmp/q.md
 *
 * Build first (`npx -y pnpm@12 build`): the bench imports the built packages.
 */
import { readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { bullmqProcessor, bullmqSink } from '@email-webhooks/bullmq'
import { createInboxProcessor, createReceiver } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { pgBossSink, pgBossWork } from '@email-webhooks/pg-boss'
import { Queue, Worker } from 'bullmq'
import PgBoss from 'pg-boss'
import { BENCH_SECRET, signedDelivery } from './payloads.js'
import { emitSection, parseArgs } from './section.js'
import { lazyServices } from './services.js'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = parseArgs(process.argv.slice(2))
const EVENTS = Number(args.events ?? 5_000)
const CONCURRENCY = Number(args.concurrency ?? 4)
const ROUNDS = Number(args.rounds ?? 3)
const OUT = args.out ?? (args.events || args.only ? undefined : join(benchDir, 'RESULTS.md'))
const ONLY = args.only?.split(',')
const HEADING = '## Inbox against BullMQ and pg-boss (issue 48)'
const IN_FLIGHT = 10
const PG_BOSS_WORK_EVENTS = Number(args['pgboss-events'] ?? 1_000)
/** The longest one drain may take before the run is called failed. */
const DRAIN_LIMIT_MS = 300_000
const log = (line) => process.stderr.write(`${line}\n`)
const silent = { error() {}, warn() {} }

const services = lazyServices()
let run = 0

const cpuNow = () => {
  const used = process.cpuUsage()
  return used.user + used.system
}

/** Records every delivery through `receiver.receive`, IN_FLIGHT at a time; each must be answered 200 queued. */
async function enqueueAll(receiver, deliveries) {
  let next = 0
  const lane = async () => {
    while (next < deliveries.length) {
      const { headers, body } = deliveries[next++]
      const answer = await receiver.receive({ headers, body })
      if (answer.status !== 200 || answer.outcome !== 'queued') throw new Error(`enqueue answered ${answer.status} ${answer.outcome}`)
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane))
}

/** Times `fn` (which resolves once every event ran): events/s, this process's CPU and the database's per event. */
async function timed(service, events, fn) {
  const cpu = cpuNow()
  const db = service.cpuMicros()
  const start = performance.now()
  await fn()
  const ms = performance.now() - start
  return { perSecond: (events / ms) * 1000, cpuPerEventUs: (cpuNow() - cpu) / events, dbCpuPerEventUs: (service.cpuMicros() - db) / events }
}

/** A promise that resolves once `count()` reached `events`, failing past DRAIN_LIMIT_MS. */
function allRan(ran, events) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${ran.count} of ${events} events ran in ${DRAIN_LIMIT_MS} ms`)), DRAIN_LIMIT_MS)
    ran.onAll = () => {
      clearTimeout(timer)
      resolve()
    }
  })
}

function noopHandlers(ran, events) {
  return {
    'email.queued': async () => {
      if (++ran.count === events) ran.onAll?.()
    },
  }
}

/** One way: fresh store (and queue), `events` recorded, then drained. */
async function oneWay(way, events) {
  const n = ++run
  const service = await services.get(way.service)
  const ran = { count: 0, onAll: undefined }
  const handlers = noopHandlers(ran, events)
  const setup = await way.setup({ url: service.url, n, handlers, ran, events })
  const receiver = createReceiver({ secret: BENCH_SECRET, handlers, logger: silent, ...setup.receiver })
  try {
    const deliveries = Array.from({ length: events }, () => signedDelivery())
    const enqueue = await timed(service, events, () => enqueueAll(receiver, deliveries))
    const done = allRan(ran, events)
    const drain = await timed(service, events, async () => {
      await setup.startDrain(receiver)
      await done
    })
    await setup.stopDrain?.(receiver)
    const check = await setup.check?.()
    return { way: way.name, events, enqueue, drain, check }
  } finally {
    await setup.close()
  }
}

const BUILT_IN = (Store, service) => ({
  service,
  async setup({ url, n }) {
    const store =
      service === 'redis' ? new Store({ url, prefix: `queues-${n}:` }) : new Store({ connectionString: url, table: `queues_${n}` })
    return {
      receiver: { store, mode: 'inbox', inbox: { worker: false, concurrency: CONCURRENCY, pollMs: 10 } },
      startDrain: (receiver) => receiver.inbox.start(),
      stopDrain: (receiver) => receiver.inbox.stop(),
      async check() {
        return undefined
      },
      close: () => store.close(),
    }
  },
})

const WAYS = [
  { name: 'built-in inbox, Redis store', ...BUILT_IN(RedisDedupStore, 'redis') },
  {
    name: 'BullMQ (bullmqSink + bullmqProcessor), Redis store',
    service: 'redis',
    async setup({ url, n, handlers }) {
      const name = `queues-${n}`
      const store = new RedisDedupStore({ url, prefix: `queues-${n}:` })
      const queue = new Queue(name, { connection: { url, enableOfflineQueue: false } })
      let worker
      return {
        receiver: { store, mode: 'inbox', inbox: { sink: bullmqSink(queue) } },
        startDrain() {
          const processor = createInboxProcessor({ handlers, store, logger: false })
          worker = new Worker(name, bullmqProcessor(processor), {
            connection: { url, maxRetriesPerRequest: null },
            concurrency: CONCURRENCY,
          })
        },
        stopDrain: () => worker?.close(),
        close: async () => {
          await worker?.close()
          await queue.obliterate({ force: true }).catch(() => {})
          await Promise.all([queue.close(), store.close()])
        },
      }
    },
  },
  {
    name: 'BullMQ bare: a job function that does nothing (no dedup, no done record; information)',
    service: 'redis',
    bare: true,
    async setup({ url, n, ran, events }) {
      const name = `queues-${n}`
      const store = new RedisDedupStore({ url, prefix: `queues-${n}:` })
      const queue = new Queue(name, { connection: { url, enableOfflineQueue: false } })
      let worker
      return {
        receiver: { store, mode: 'inbox', inbox: { sink: bullmqSink(queue) } },
        startDrain() {
          worker = new Worker(
            name,
            async () => {
              if (++ran.count === events) ran.onAll?.()
            },
            { connection: { url, maxRetriesPerRequest: null }, concurrency: CONCURRENCY },
          )
        },
        stopDrain: () => worker?.close(),
        close: async () => {
          await worker?.close()
          await queue.obliterate({ force: true }).catch(() => {})
          await Promise.all([queue.close(), store.close()])
        },
      }
    },
  },
  { name: 'built-in inbox, PostgreSQL store', ...BUILT_IN(PostgresDedupStore, 'postgres') },
  {
    name: 'pg-boss (pgBossSink + pgBossWork), PostgreSQL store',
    service: 'postgres',
    // pg-boss 10 waits its polling interval (at least 0.5 s) after every fetch: pgBossWork drains at
    // most batchSize (50 by default) jobs per fetch. Fewer events, or a drain lasts a minute.
    events: PG_BOSS_WORK_EVENTS,
    setup: ({ url, n, handlers }) =>
      pgBossWay(url, n, async ({ boss, name, store }) => {
        const processor = createInboxProcessor({ handlers, store, logger: false })
        // One worker at pgBossWork's defaults (a batch of up to 50 jobs per fetch, all at once), polling every 0.5 s.
        await pgBossWork(boss, name, processor, { pollingIntervalSeconds: 0.5 })
      }),
  },
  {
    name: 'pg-boss bare: a job function that does nothing (no dedup, no done record; information)',
    service: 'postgres',
    bare: true,
    setup: ({ url, n, ran, events }) =>
      pgBossWay(url, n, async ({ boss, name }) => {
        // As a pg-boss user would run it: batches of 100 (one worker per CONCURRENCY, as above).
        for (let i = 0; i < CONCURRENCY; i++)
          await boss.work(name, { pollingIntervalSeconds: 0.5, batchSize: 100 }, async (jobs) => {
            ran.count += jobs.length
            if (ran.count >= events) ran.onAll?.()
          })
      }),
  },
]

/**
 * A pg-boss way: its own schema and queue on the bench's PostgreSQL, the receiver's sink into it,
 * and `drain({ boss, name, store })` to start its workers.
 */
async function pgBossWay(url, n, drain) {
  const name = `queues_${n}`
  const store = new PostgresDedupStore({ connectionString: url, table: `queues_${n}` })
  const boss = new PgBoss({ connectionString: url, schema: `pgboss_${n}` })
  boss.on('error', () => {})
  await boss.start()
  await boss.createQueue(name)
  return {
    receiver: { store, mode: 'inbox', inbox: { sink: pgBossSink(boss, name) } },
    startDrain: () => drain({ boss, name, store }),
    stopDrain: () => boss.offWork(name),
    close: async () => {
      await boss.stop({ graceful: false, wait: true })
      await store.close()
    },
  }
}

const started = new Date()
const startLoad = loadavg()[0]
const results = []
try {
  const ways = WAYS.filter((way) => !ONLY || ONLY.some((o) => way.name.toLowerCase().includes(o)))
  for (let r = 0; r < ROUNDS; r++) {
    for (const way of ways) {
      const row = await oneWay(way, Math.min(EVENTS, way.events ?? EVENTS))
      results.push({ ...row, round: r + 1 })
      log(
        `round ${r + 1} ${way.name}: enqueue ${Math.round(row.enqueue.perSecond)}/s ${row.enqueue.cpuPerEventUs.toFixed(0)} + DB ${row.enqueue.dbCpuPerEventUs.toFixed(0)} µs; drain ${Math.round(row.drain.perSecond)}/s ${row.drain.cpuPerEventUs.toFixed(0)} + DB ${row.drain.dbCpuPerEventUs.toFixed(0)} µs`,
      )
    }
  }
} finally {
  await services.stopAll()
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const version = (name) => JSON.parse(readFileSync(join(benchDir, 'node_modules', name, 'package.json'), 'utf8')).version
const names = [...new Set(results.map((row) => row.way))]
const summary = names.map((way) => {
  const rows = results.filter((row) => row.way === way)
  const m = (part, key) => median(rows.map((row) => row[part][key]))
  return {
    way,
    events: rows[0].events,
    enqueue: { perSecond: m('enqueue', 'perSecond'), cpu: m('enqueue', 'cpuPerEventUs'), db: m('enqueue', 'dbCpuPerEventUs') },
    drain: { perSecond: m('drain', 'perSecond'), cpu: m('drain', 'cpuPerEventUs'), db: m('drain', 'dbCpuPerEventUs') },
    rounds: rows.map((row) => Math.round(row.drain.perSecond)),
  }
})
const f = (n) => Math.round(n).toLocaleString('en-US')
const lines = [
  HEADING,
  '',
  `Run of ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC by \`node bench/src/queues.js\` (writes this section; a full \`npx -y pnpm@12 bench\` run rewrites the file without it). @email-webhooks/core ${version('@email-webhooks/core')}, bullmq ${version('bullmq')}, pg-boss ${version('pg-boss')}, ioredis ${version('ioredis')}, pg ${version('pg')}; Redis 7 (\`appendonly yes\`, \`appendfsync always\`) and PostgreSQL 15 (defaults, \`synchronous_commit\` on) started by the bench. Node ${process.version}; ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}; load average ${startLoad.toFixed(2)} at start, ${loadavg()[0].toFixed(2)} at end.`,
  '',
  `The same receiver (\`createReceiver\`, \`mode: 'inbox'\`) records ${f(EVENTS)} signed ~1 KB events (\`receiver.receive\`, ${IN_FLIGHT} in flight: the enqueue) into a fresh inbox or queue, then they are drained at concurrency ${CONCURRENCY} with a handler that does nothing: the built-in worker (\`inbox.start()\`); a BullMQ \`Worker\` running \`bullmqProcessor(createInboxProcessor(…))\`; \`pgBossWork(…)\` (one worker at its defaults: up to 50 jobs a fetch, processed at once). Every way records each event's done record in the same store (dedup): durable the same way. The bare rows run a BullMQ or pg-boss job function that does nothing, no dedup (what the queue alone costs; information; pg-boss bare fetches batches of 100, as a pg-boss user would). pg-boss 10 waits its polling interval (at least 0.5 s) after every fetch, whether it found jobs or not: \`pgBossWork\`'s drain is bounded by its batch (50) × 2 fetches a second, so it drains ${f(PG_BOSS_WORK_EVENTS)} events only. One process, unpinned, ${ROUNDS} rounds (ways interleaved), medians; CPU is this process's per event and the database server's (all its processes, /proc, 10 ms ticks).`,
  '',
  '| Way | events | enqueue events/s | enqueue CPU/event (+ DB) | drain events/s (rounds) | drain CPU/event | drain DB CPU/event |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...summary.map(
    (s) =>
      `| ${s.way} | ${f(s.events)} | ${f(s.enqueue.perSecond)} | ${s.enqueue.cpu.toFixed(0)} µs (+ ${s.enqueue.db.toFixed(0)} µs) | ${f(s.drain.perSecond)} (${s.rounds.map(f).join(', ')}) | ${s.drain.cpu.toFixed(0)} µs | ${s.drain.db.toFixed(0)} µs |`,
  ),
  '',
]
emitSection(lines, OUT, HEADING)
