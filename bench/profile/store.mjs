/**
 * `node store.mjs [rows] [rounds]`: server-side cost of the durable SQLite store alone, on a table
 * that already holds `rows` done records (default 300,000: a store some days into its retention,
 * not a fresh file). Fills the table through the store (durability 'normal'), reopens it with the
 * default durability ('full'), then times claim + complete of fresh random-UUID keys with 10 in
 * flight: `rounds` rounds (default 5) of 20,000 events after a 5,000-event warm-up, CPU µs per
 * event of this process (user and kernel, all threads), median round. Pin it to one core
 * (`taskset -c 0`) as the bench pins the server.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { claimCompleteRate } from '../src/stores.js'

const rows = Number(process.argv[2] ?? 300_000)
const rounds = Number(process.argv[3] ?? 5)
if (!Number.isInteger(rows) || rows < 0 || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: node store.mjs [rows ≥ 0] [rounds ≥ 1]')
  process.exit(2)
}
const EVENTS = 20_000

/** The bench's claim + complete loop (10 in flight), with this process's CPU per event. */
async function claimComplete(store, events) {
  const cpu = process.cpuUsage()
  const perSecond = events === 0 ? 0 : await claimCompleteRate(store, { events, concurrency: 10 })
  const used = process.cpuUsage(cpu)
  return { user: used.user / events, kernel: used.system / events, total: (used.user + used.system) / events, perSecond }
}

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-store-profile-'))
const path = join(dir, 'dedup.db')
try {
  const filler = new SqliteDedupStore({ path, durability: 'normal' })
  await claimComplete(filler, rows)
  await filler.close()
  const store = new SqliteDedupStore({ path })
  await claimComplete(store, 5_000)
  const results = []
  for (let round = 0; round < rounds; round++) results.push(await claimComplete(store, EVENTS))
  await store.close()
  const median = [...results].sort((a, b) => a.total - b.total)[Math.floor(results.length / 2)]
  const all = results.map((r) => r.total.toFixed(1)).join(', ')
  console.log(
    `table of ${rows.toLocaleString('en-US')} rows: ${median.total.toFixed(1)} µs CPU per claim + complete (user ${median.user.toFixed(1)}, kernel ${median.kernel.toFixed(1)}), ${Math.round(median.perSecond)}/s; rounds: ${all}`,
  )
} finally {
  rmSync(dir, { recursive: true, force: true })
}
