/**
 * What a running SQLite store pays while it drops a purge backlog (issue 48): a store (as a
 * receiver's: `durability: 'full'`, 20 lanes of claim + complete) warms up on a new file, then a
 * backlog of `backlog` expired done records is added by bench/src/fill.js while the store is open
 * (as bench/src/retained.js does under its server), and the lanes run `events` events more. Prints
 * events/s, the events' p99 and slowest, the event loop's delay, the statements over `SLOW_SQL` ms
 * (default 3) with their count and total, and the expired records left at the end.
 *
 *   node bench/profile/purge-stalls.mjs [backlog=1000000] [events=60000]
 *
 * Build first (`npx -y pnpm@12 build`).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { fillSqliteStore } from '../src/fill.js'
import { timeStatements } from './sql-timing.mjs'

const backlog = Number(process.argv[2] ?? 1_000_000)
const events = Number(process.argv[3] ?? 60_000)
const slowMs = Number(process.env.SLOW_SQL ?? 3)
const require = createRequire(join(process.cwd(), 'packages/core/package.json'))
const Database = require('better-sqlite3')
const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')

const slow = new Map()
let timing = false
timeStatements(Database, (ms, sql) => {
  if (!timing || ms < slowMs) return
  const key = sql.replace(/_g\d+/g, '_gN').slice(0, 90)
  const seen = slow.get(key) ?? { count: 0, total: 0, max: 0 }
  seen.count++
  seen.total += ms
  seen.max = Math.max(seen.max, ms)
  slow.set(key, seen)
})

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-purge-stalls-'))
const path = join(dir, 'store.db')
const store = new SqliteDedupStore({ path, durability: 'full' })
const OPTIONS = { leaseMs: 60_000, retentionMs: 7 * 86_400_000 }
let next = 0
async function lanes(count, latencies) {
  const end = next + count
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < end) {
        const key = `default:e-${next++}`
        const started = performance.now()
        const claim = await store.claim(key, OPTIONS)
        if (claim.status !== 'acquired') throw new Error(`${key}: ${claim.status}`)
        await store.complete(claim.claim, OPTIONS)
        latencies?.push(performance.now() - started)
      }
    }),
  )
}
await lanes(10_000)
const db = new Database(path)
const filled = performance.now()
await fillSqliteStore(db, { path, count: backlog, expired: true })
execFileSync('sync')
console.log(`backlog of ${backlog} filled in ${((performance.now() - filled) / 1000).toFixed(1)} s`)
const left = db.prepare('SELECT count(*) FROM email_webhook_dedup_done WHERE expires_at <= ?').pluck()
const loop = monitorEventLoopDelay({ resolution: 1 })
loop.enable()
timing = true
const latencies = []
const started = performance.now()
await lanes(events, latencies)
const elapsed = (performance.now() - started) / 1000
timing = false
loop.disable()
latencies.sort((a, b) => a - b)
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))].toFixed(2)
console.log(
  `${events} events in ${elapsed.toFixed(2)} s: ${Math.round(events / elapsed)}/s; p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, slowest ${latencies.at(-1).toFixed(1)} ms; event loop delay p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`,
)
console.log(`expired records left at the end: ${left.get(Date.now())}`)
for (const [sql, s] of [...slow].sort((a, b) => b[1].total - a[1].total).slice(0, 12))
  console.log(`  ${s.count} × ${sql}: total ${s.total.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`)
db.close()
await store.close()
rmSync(dir, { recursive: true, force: true })
