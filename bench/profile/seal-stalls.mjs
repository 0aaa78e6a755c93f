/**
 * How long the SQLite store's seal of its current table holds the event loop (issue 48). The seal
 * runs inside a batch's write transaction, on the event loop, every `generationRecords` (50,000)
 * done records. Until 2026-11-28 it hashed the table's 50,000 keys there (60–270 ms); now it renames
 * the table, lists it and makes a new one and the view, and the keys are hashed afterwards, 250 a
 * write batch, into an index of 1,024 shards that each grow and shed dropped keys on their own.
 * Each seal is timed from its first statement to the event loop's next turn, so it is the whole
 * batch's wait from there, commit included; the slowest events show what else waits.
 *
 * Opens (or first fills, with bench/src/fill.js) a store file holding `retained` done records, then
 * runs 20 lanes of claim + complete (`durability: 'full'`, as a receiver's) for `events` events and
 * prints the time the store took to open (its index loaded), events/s, each seal's stall, the
 * events' p99, p99.9 and slowest and how many took over 10 ms, and the event loop's delay (p99, longest). 11,700,000 records put the
 * index where one table of 16,777,216 slots was made anew at twice the size at the next seal
 * (0.8–1.6 s), before the index was sharded.
 *
 *   node bench/profile/seal-stalls.mjs <file> [retained=11700000] [events=200000]
 *   SLOW_SQL=50 node bench/profile/seal-stalls.mjs <file>   (also prints each statement over 50 ms)
 *
 * Build first (`npx -y pnpm@12 build`). The file is kept (fill once, run again); run each build on
 * a copy, and `sync` after copying: pages a copy left dirty make the first checkpoint's sync wait
 * for all of them (450 ms at 800 MB, seen as one slow COMMIT).
 */
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { fillSqliteStore } from '../src/fill.js'
import { timeStatements } from './sql-timing.mjs'

const [path, retainedText = '11700000', eventsText = '200000'] = process.argv.slice(2)
const retained = Number(retainedText)
const events = Number(eventsText)
if (!path || !Number.isInteger(retained) || retained < 0 || !Number.isInteger(events) || events < 1) {
  console.error('usage: node seal-stalls.mjs <file> [retained] [events]')
  process.exit(2)
}
const require = createRequire(join(process.cwd(), 'packages/core/package.json'))
const Database = require('better-sqlite3')
const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')
const TABLE = 'email_webhook_dedup'

if (!existsSync(path)) {
  const started = performance.now()
  await new SqliteDedupStore({ path }).close()
  const db = new Database(path)
  const added = await fillSqliteStore(db, { path, count: retained })
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
  console.log(`filled ${added} done records in ${((performance.now() - started) / 1000).toFixed(0)} s`)
}

// A seal's first statement is the prepare of `SELECT max(id) FROM <table>_gen` (generations.ts #seal).
const stalls = []
const prepare = Database.prototype.prepare
Database.prototype.prepare = function (source, ...rest) {
  if (source === `SELECT max(id) FROM ${TABLE}_gen`) {
    const start = performance.now()
    setImmediate(() => stalls.push(performance.now() - start))
  }
  return prepare.call(this, source, ...rest)
}

// SLOW_SQL=<ms>: prints every statement (and exec) that took longer, with its SQL, as it happens.
const slowSql = Number(process.env.SLOW_SQL ?? 0)
if (slowSql > 0) {
  timeStatements(Database, (ms, sql, method) => {
    if (ms > slowSql) console.log(`slow ${method} ${ms.toFixed(1)} ms: ${sql.slice(0, 160)}`)
  })
  const exec = Database.prototype.exec
  Database.prototype.exec = function (source) {
    const start = performance.now()
    try {
      return exec.call(this, source)
    } finally {
      const ms = performance.now() - start
      if (ms > slowSql) console.log(`slow exec ${ms.toFixed(1)} ms: ${source.replace(/\s+/g, ' ').slice(0, 160)}`)
    }
  }
}

const opening = performance.now()
const store = new SqliteDedupStore({ path })
await store.claim(`default:${crypto.randomUUID()}`, { leaseMs: 30_000, retentionMs: 60_000 })
const openMs = performance.now() - opening
const loop = monitorEventLoopDelay({ resolution: 1 })
loop.enable()
const options = { leaseMs: 30_000, retentionMs: 7 * 864e5 }
const times = []
let sent = 0
const started = performance.now()
await Promise.all(
  Array.from({ length: 20 }, async () => {
    while (sent < events) {
      sent++
      const at = performance.now()
      const claim = await store.claim(`default:${crypto.randomUUID()}`, options)
      if (claim.status !== 'acquired') throw new Error(`a new key was ${claim.status}`)
      await store.complete(claim.claim, options)
      times.push(performance.now() - at)
    }
  }),
)
const seconds = (performance.now() - started) / 1000
loop.disable()
await store.close()
times.sort((a, b) => a - b)
const at = (q) => times[Math.min(times.length - 1, Math.floor(times.length * q))].toFixed(2)
console.log(
  `${retained} retained: open ${openMs.toFixed(0)} ms; ${times.length} events, ${Math.round(times.length / seconds)}/s; ` +
    `${stalls.length} seals, stalls ${stalls.map((ms) => ms.toFixed(1)).join(', ')} ms; ` +
    `event p99 ${at(0.99)} ms, p99.9 ${at(0.999)} ms, max ${times.at(-1).toFixed(1)} ms, ${times.filter((ms) => ms > 10).length} over 10 ms; ` +
    `event loop delay p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`,
)
