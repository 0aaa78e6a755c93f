/**
 * Inbox worker throughput (issue 35), through the public API only: a receiver in `mode: 'inbox'`
 * with `inbox: { worker: false }` on a durable SQLite store (and a PostgreSQL one) records `events` signed deliveries
 * (`receiver.receive`, 10 in flight: the enqueue rate), then its worker drains them: with
 * `receiver.inbox.start()` at concurrency 1 and 4 (until the handler ran for every event and
 * `inbox.stats()` shows nothing pending or running), and one `await receiver.inbox.work()` at a
 * time. Events per second and CPU µs per event (this process, `process.cpuUsage()`).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createReceiver } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { BENCH_SECRET, signedDelivery } from './payloads.js'

export const WORKER_MODES = [
  { name: 'start(), concurrency 1', concurrency: 1, loop: 'start' },
  { name: 'start(), concurrency 4', concurrency: 4, loop: 'start' },
  { name: 'work() one at a time', concurrency: 1, loop: 'work' },
]
const IN_FLIGHT = 10

const cpuMicros = (since) => {
  const used = process.cpuUsage(since)
  return used.user + used.system
}

/**
 * Records `deliveries` through `receiver.receive`, `IN_FLIGHT` at a time; every answer must end 200
 * queued. A 503 (the store slower than `storeTimeoutMs`, on a loaded machine) is sent again after
 * 50 ms, as the sender would retry it, at most 5 times; resolves with how many were sent again.
 */
async function enqueueAll(receiver, deliveries) {
  let next = 0
  let retried = 0
  const lane = async () => {
    while (next < deliveries.length) {
      const { headers, body } = deliveries[next++]
      for (let attempt = 1; ; attempt++) {
        const answer = await receiver.receive({ headers, body })
        if (answer.status === 200 && answer.outcome === 'queued') break
        if (answer.status !== 503 || attempt === 5)
          throw new Error(`enqueue answered ${answer.status} ${answer.outcome} (attempt ${attempt})`)
        retried++
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane))
  return retried
}

/** Drains the inbox with the mode's loop; resolves once every event ran and stats() shows it empty. */
async function drain(receiver, mode, events, ran) {
  if (mode.loop === 'work') {
    for (let i = 0; i < events * 2 && ran.count < events; i++) await receiver.inbox.work()
  } else {
    const done = new Promise((resolve) => {
      ran.onAll = resolve
    })
    receiver.inbox.start()
    await done
    await receiver.inbox.stop()
  }
  const stats = await receiver.inbox.stats()
  if (ran.count !== events || stats.pending + stats.running + stats.dead !== 0) {
    throw new Error(`the worker ran ${ran.count} of ${events} events; the inbox still holds ${JSON.stringify(stats)}`)
  }
}

/** A fresh store of `kind` for one mode: a new SQLite file, or a table of its own on the PostgreSQL server. */
async function openStore(kind, dir, mode, postgresUrl) {
  const name = `inbox_${mode.loop}_${mode.concurrency}`
  if (kind === 'SQLite') return new SqliteDedupStore({ path: join(dir, `${name}.db`) })
  const { PostgresDedupStore } = await import('@email-webhooks/core/postgres')
  return new PostgresDedupStore({ connectionString: postgresUrl, table: `bench_${name}_${Date.now()}` })
}

async function oneMode(kind, dir, mode, events, postgresUrl) {
  const store = await openStore(kind, dir, mode, postgresUrl)
  const ran = { count: 0, onAll: undefined }
  const receiver = createReceiver({
    secret: BENCH_SECRET,
    store,
    mode: 'inbox',
    inbox: { worker: false, concurrency: mode.concurrency, pollMs: 10 },
    handlers: {
      'email.queued': async () => {
        if (++ran.count === events) ran.onAll?.()
      },
    },
    logger: { error() {}, warn() {} },
  })
  try {
    const deliveries = Array.from({ length: events }, () => signedDelivery())
    let cpu = process.cpuUsage()
    let start = performance.now()
    const retried = await enqueueAll(receiver, deliveries)
    const enqueue = { perSecond: (events / (performance.now() - start)) * 1000, cpuPerEventUs: cpuMicros(cpu) / events, retried }
    cpu = process.cpuUsage()
    start = performance.now()
    await drain(receiver, mode, events, ran)
    const worker = { perSecond: (events / (performance.now() - start)) * 1000, cpuPerEventUs: cpuMicros(cpu) / events }
    return { store: kind, mode: mode.name, events, enqueue, worker }
  } finally {
    await store.close()
  }
}

/**
 * Every worker mode on a fresh SQLite file of `events` queued entries, then (given `postgresUrl`) on a
 * fresh PostgreSQL table.
 */
export async function runInboxWorkerBench({ events, modes = WORKER_MODES, postgresUrl }) {
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-inbox-'))
  const rows = []
  try {
    for (const kind of postgresUrl ? ['SQLite', 'PostgreSQL'] : ['SQLite'])
      for (const mode of modes) rows.push(await oneMode(kind, dir, mode, events, postgresUrl))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}
