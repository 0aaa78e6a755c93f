/**
 * What an inbox-mode event costs to keep while its done entry is retained (issue 48: bytes on disk,
 * and Redis memory, per retained event): `count` signed events (the sender's envelope, `size` bytes
 * of body) enqueued, taken and finished through each store's own inbox (`store.inbox`, 7-day
 * retention), with the done record of the event's claim beside it as the worker writes it. Measured
 * as the growth of the SQLite file (checkpointed: `close()` then its size), the PostgreSQL tables
 * and indexes (`pg_total_relation_size`), and Redis's `used_memory`, each divided by `count`; and
 * the same count of claims and completes alone (request mode) on a fresh store, so that the
 * difference is what the inbox adds. The events go in 20 chunks with a VACUUM after each on
 * PostgreSQL, as autovacuum does on a server that runs: the dead row versions of a chunk's updates
 * leave room that the next chunk's rows reuse (one chunk with one VACUUM at the end counts each
 * entry's three versions: 3,315 bytes against 1,361 on SQLite). Leases of 5 s, waited out before
 * Redis's memory is read (each take's token key lives as long as its lease).
 *
 *   node bench/profile/inbox-bytes.mjs [count=20000] [size=1024]
 *
 * Build first (`npx -y pnpm@12 build`).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Redis from 'ioredis'
import pg from 'pg'
import { signedDelivery } from '../src/payloads.js'
import { startPostgres, startRedis } from '../src/services.js'

const count = Number(process.argv[2] ?? 20_000)
const size = Number(process.argv[3] ?? 1024)
const RETENTION = { retentionMs: 7 * 24 * 3600_000 }
/**
 * Short leases: Redis keeps each take's lease token in a key of its own until the lease ends (the
 * finish leaves it to expire), so the measurement waits them out and counts only what stays.
 */
const LEASE_MS = 5_000
const LEASE = { leaseMs: LEASE_MS, ...RETENTION }
const IN_FLIGHT = 50

/** `count` events as the receiver records them: key, type, the verified body, its timestamp. */
function items() {
  return Array.from({ length: count }, () => {
    const { headers, body } = signedDelivery(size)
    const payload = Buffer.from(body).toString('utf8')
    return { key: `default:${headers['webhook-id']}`, type: 'email.delivered', payload, timestamp: Number(headers['webhook-timestamp']) }
  })
}

/** Runs `step` over `list`, IN_FLIGHT at a time. */
async function each(list, step) {
  let next = 0
  const lane = async () => {
    while (next < list.length) await step(list[next++])
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane))
}

/** Chunks of the run: PostgreSQL's last VACUUM frees room nothing reuses, a chunk's dead versions (about 1/CHUNKS of the figure's inbox part). */
const CHUNKS = 20

/** `mode` over `list` in CHUNKS chunks, `between()` after each. */
async function inChunks(mode, store, list, between) {
  const per = Math.ceil(list.length / CHUNKS)
  for (let i = 0; i < list.length; i += per) {
    await mode(store, list.slice(i, i + per))
    await between()
  }
}

/** Inbox mode, as the receiver and its worker write: enqueue; take, claim, complete, finish. */
async function inboxMode(store, list) {
  await each(list, async (item) => {
    if ((await store.inbox.enqueue(item, RETENTION)) !== 'queued') throw new Error(`${item.key} not queued`)
  })
  await each(list, async () => {
    const lease = await store.inbox.take({ leaseMs: LEASE_MS, ordered: false })
    if (!lease) throw new Error('nothing to take')
    const claimed = await store.claim(lease.key, LEASE)
    if (claimed.status !== 'acquired') throw new Error(`${lease.key} ${claimed.status}`)
    await store.complete(claimed.claim, RETENTION)
    if (!(await store.inbox.finish(lease, RETENTION))) throw new Error(`${lease.key} not finished`)
  })
}

/** Request mode: claim, complete. */
async function requestMode(store, list) {
  await each(list, async (item) => {
    const claimed = await store.claim(item.key, LEASE)
    if (claimed.status !== 'acquired') throw new Error(`${item.key} ${claimed.status}`)
    await store.complete(claimed.claim, RETENTION)
  })
}

const rows = []
const MODES = { request: requestMode, inbox: inboxMode }

// SQLite: the file's growth once checkpointed (close() truncates the WAL).
for (const [mode, write] of Object.entries(MODES)) {
  const dir = mkdtempSync(join(tmpdir(), 'inbox-bytes-'))
  const path = join(dir, 'db.sqlite')
  const empty = new SqliteDedupStore({ path, warn: () => {} })
  await empty.close()
  const before = statSync(path).size
  const store = new SqliteDedupStore({ path, warn: () => {} })
  await inChunks(write, store, items(), async () => {})
  await store.close()
  rows.push({ store: 'SQLite (file)', mode, bytes: (statSync(path).size - before) / count })
  rmSync(dir, { recursive: true, force: true })
}

// PostgreSQL: the store's tables and their indexes, after VACUUM.
const postgres = await startPostgres()
const admin = new pg.Client({ connectionString: postgres.url })
await admin.connect()
for (const [mode, write] of Object.entries(MODES)) {
  const table = `bytes_${mode}`
  const store = new PostgresDedupStore({ connectionString: postgres.url, table, warn: () => {} })
  await store.inbox.stats()
  const total = async () => {
    await admin.query('VACUUM')
    const { rows: sizes } = await admin.query(
      `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c
       WHERE c.relkind IN ('r', 'p') AND c.relname LIKE $1`,
      [`${table}%`],
    )
    return Number(sizes[0].bytes)
  }
  const before = await total()
  await inChunks(write, store, items(), () => admin.query('VACUUM'))
  rows.push({ store: 'PostgreSQL (tables and indexes)', mode, bytes: ((await total()) - before) / count })
  await store.close()
}
await admin.end()
await postgres.stop()

// Redis: used_memory.
const redis = await startRedis()
const client = new Redis(redis.url)
for (const [mode, write] of Object.entries(MODES)) {
  const store = new RedisDedupStore({ url: redis.url, prefix: `bytes-${mode}:`, warn: () => {} })
  await store.inbox.stats()
  const used = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1])
  const before = await used()
  await inChunks(write, store, items(), async () => {})
  // The lease tokens' keys end with their leases: wait them out, and let SCAN expire each one it meets.
  await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 500))
  let cursor = '0'
  do {
    ;[cursor] = await client.scan(cursor, 'MATCH', `bytes-${mode}:*`, 'COUNT', 1_000)
  } while (cursor !== '0')
  rows.push({ store: 'Redis (used_memory)', mode, bytes: ((await used()) - before) / count })
  await store.close()
}
client.disconnect()
await redis.stop()

console.log(`${count.toLocaleString('en')} events, ${size}-byte bodies, 7-day retention`)
console.log('| Store | request mode: bytes a retained event | inbox mode | the inbox adds |')
console.log('| --- | ---: | ---: | ---: |')
for (const store of [...new Set(rows.map((row) => row.store))]) {
  const of = (mode) => rows.find((row) => row.store === store && row.mode === mode)?.bytes ?? Number.NaN
  const request = of('request')
  const inbox = of('inbox')
  console.log(`| ${store} | ${Math.round(request)} | ${Math.round(inbox)} | ${Math.round(inbox - request)} |`)
}
process.exit(0)
