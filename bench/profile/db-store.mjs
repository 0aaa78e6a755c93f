/**
 * The shared stores' cost per event without HTTP: `count` fresh events, 10 in flight, each the
 * store's claim then complete (ours) or the hand-written dedup's `seen` then `record`
 * (../src/hand/dedup.js), on a PostgreSQL or Redis the script starts (../src/services.js: fsync
 * on, `synchronous_commit = on`; Redis with `appendfsync always`).
 *
 *   node bench/profile/db-store.mjs <postgres|redis> [count] [rounds]
 *
 * Per event, median of `rounds` rounds (variants alternated): wall µs (10 in flight), this process's
 * CPU µs, the database server's CPU µs (/proc, 10 ms ticks), and for PostgreSQL the WAL flushes
 * (pg_stat_wal.wal_sync). CORE_DIST=<folder with postgres.js and redis.js> measures another build
 * of core's stores.
 */
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { postgresDedup, redisDedup } from '../src/hand/dedup.js'
import { startPostgres, startRedis } from '../src/services.js'

const OPTIONS = { leaseMs: 30_000, retentionMs: 7 * 24 * 3600_000 }
const kind = process.argv[2]
const count = Number(process.argv[3] ?? 5_000)
const rounds = Number(process.argv[4] ?? 3)
if ((kind !== 'postgres' && kind !== 'redis') || !Number.isInteger(count) || !Number.isInteger(rounds)) {
  console.error('usage: node db-store.mjs <postgres|redis> [count] [rounds]')
  process.exit(2)
}
const from = (name) =>
  process.env.CORE_DIST ? pathToFileURL(join(process.env.CORE_DIST, `${name}.js`)).href : `@email-webhooks/core/${name}`

const server = kind === 'postgres' ? await startPostgres() : await startRedis()
const probe = kind === 'postgres' ? new pg.Pool({ connectionString: server.url, max: 1 }) : undefined
/** WAL flushes so far (PostgreSQL), or 0. */
async function walSyncs() {
  if (!probe) return 0
  await probe.query('SELECT pg_stat_force_next_flush()')
  await probe.query('SELECT 1')
  return Number((await probe.query('SELECT wal_sync FROM pg_stat_wal')).rows[0].wal_sync)
}

/** Each variant as `event(id)`: one event through its dedup, and `close()`. */
async function open(variant) {
  if (variant === 'hand') {
    const dedup = kind === 'postgres' ? await postgresDedup({ url: server.url }) : await redisDedup({ url: server.url })
    return {
      event: async (id) => {
        if (!(await dedup.seen(id))) await dedup.record(id)
      },
      close: () => dedup.close(),
    }
  }
  const store =
    kind === 'postgres'
      ? new (await import(from('postgres'))).PostgresDedupStore({ connectionString: server.url })
      : new (await import(from('redis'))).RedisDedupStore({ url: server.url })
  return {
    event: async (id) => {
      const result = await store.claim(`bench:${id}`, OPTIONS)
      if (result.status !== 'acquired' || !(await store.complete(result.claim, OPTIONS))) throw new Error('a fresh event was not handled')
    },
    close: () => store.close(),
  }
}

async function round(variant, n) {
  let next = 0
  const lane = async () => {
    while (next++ < n) await variant.event(randomUUID())
  }
  const syncs = await walSyncs()
  const db = server.cpuMicros()
  const cpu = process.cpuUsage()
  const started = performance.now()
  await Promise.all(Array.from({ length: 10 }, lane))
  const wall = performance.now() - started
  const own = process.cpuUsage(cpu)
  return {
    wall: (wall * 1000) / n,
    cpu: (own.user + own.system) / n,
    db: (server.cpuMicros() - db) / n,
    syncs: ((await walSyncs()) - syncs) / n,
  }
}

const variants = { hand: await open('hand'), ours: await open('ours') }
const results = { hand: [], ours: [] }
for (const variant of Object.values(variants)) await round(variant, Math.min(count, 1_000))
for (let r = 0; r < rounds; r++) for (const [name, variant] of Object.entries(variants)) results[name].push(await round(variant, count))
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]
for (const [name, rows] of Object.entries(results)) {
  const m = (field) => median(rows.map((row) => row[field]))
  const syncs = kind === 'postgres' ? `, WAL flushes/event ${m('syncs').toFixed(2)}` : ''
  console.log(
    `${kind} ${name.padEnd(4)} ${count} events x ${rounds}: wall µs/event ${m('wall').toFixed(1)}, client CPU µs/event ${m('cpu').toFixed(1)}, DB CPU µs/event ${m('db').toFixed(1)}${syncs}`,
  )
}
for (const variant of Object.values(variants)) await variant.close()
await probe?.end()
await server.stop()
process.exit(0)
