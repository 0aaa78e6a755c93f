/**
 * What the server-side `statement_timeout` that the PostgreSQL store's own pool sends costs: claim +
 * complete traffic (16 lanes, no HTTP) on two stores of one server, the store's limit on (its
 * default, a tenth under queryTimeoutMs) and off (`?statement_timeout=0` in the connection string,
 * which the store keeps), each in turn for `seconds`, `rounds` times, the order alternating. Prints
 * each round's events/s and the database server's CPU per event (every postgres process, /proc,
 * 10 ms ticks), and their medians. Then a second method, without the store: one connection with
 * the limit and one without (pg clients, as the store's pool opens them) each run `statements`
 * prepared `SELECT 1` in turn, and the backend's own CPU per statement is read from /proc.
 *
 *   node bench/profile/pg-statement-timeout.mjs [rounds=6] [seconds=3]
 *
 * Build first (`npx -y pnpm@12 build`).
 */
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import pg from 'pg'
import { startPostgres } from '../src/services.js'

const rounds = Number(process.argv[2] ?? 6)
const seconds = Number(process.argv[3] ?? 3)
const statements = Number(process.argv[4] ?? 20_000)
const LANES = 16
const OPTIONS = { leaseMs: 30_000, retentionMs: 3_600_000 }

/** CPU ticks (10 ms) of every postgres process so far. */
function databaseTicks() {
  let total = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      if (!stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).startsWith('postgres')) continue
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      total += Number(fields[11]) + Number(fields[12])
    } catch {}
  }
  return total
}

const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)]

const server = await startPostgres()
const stores = {
  on: new PostgresDedupStore({ connectionString: server.url, table: 'limit_on' }),
  off: new PostgresDedupStore({ connectionString: `${server.url}?statement_timeout=0`, table: 'limit_off' }),
}
try {
  for (const store of Object.values(stores)) await store.claim(randomUUID(), OPTIONS)
  const results = { on: [], off: [] }
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 ? ['off', 'on'] : ['on', 'off']) {
      const store = stores[name]
      let events = 0
      const ticks = databaseTicks()
      const started = performance.now()
      const end = started + seconds * 1000
      await Promise.all(
        Array.from({ length: LANES }, async () => {
          while (performance.now() < end) {
            const claimed = await store.claim(randomUUID(), OPTIONS)
            if (claimed.status === 'acquired') await store.complete(claimed.claim, OPTIONS)
            events++
          }
        }),
      )
      const elapsed = (performance.now() - started) / 1000
      results[name].push({ rate: events / elapsed, cpu: ((databaseTicks() - ticks) * 10_000) / events })
    }
  }
  for (const name of ['on', 'off']) {
    const rates = results[name].map((r) => r.rate)
    const cpus = results[name].map((r) => r.cpu)
    console.log(
      `limit ${name}: events/s ${rates.map((r) => Math.round(r)).join(', ')} (median ${Math.round(median(rates))}); database CPU per event ${cpus.map((c) => c.toFixed(1)).join(', ')} µs (median ${median(cpus).toFixed(1)})`,
    )
  }
  // Second method: one backend each, SELECT 1 back to back, its CPU from /proc/<backend pid>.
  const clients = {
    on: new pg.Client({ connectionString: server.url, statement_timeout: 2_700 }),
    off: new pg.Client({ connectionString: server.url }),
  }
  const perStatement = { on: [], off: [] }
  for (const client of Object.values(clients)) await client.connect()
  try {
    const pids = {}
    for (const [name, client] of Object.entries(clients)) pids[name] = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
    const backendTicks = (pid) => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      return Number(fields[11]) + Number(fields[12])
    }
    for (let round = 0; round < rounds; round++) {
      for (const name of round % 2 ? ['off', 'on'] : ['on', 'off']) {
        const ticks = backendTicks(pids[name])
        for (let i = 0; i < statements; i++) await clients[name].query({ name: 'one', text: 'SELECT 1' })
        perStatement[name].push(((backendTicks(pids[name]) - ticks) * 10_000) / statements)
      }
    }
  } finally {
    for (const client of Object.values(clients)) await client.end()
  }
  for (const name of ['on', 'off']) {
    console.log(
      `limit ${name}, SELECT 1 on one backend: CPU per statement ${perStatement[name].map((c) => c.toFixed(1)).join(', ')} µs (median ${median(perStatement[name]).toFixed(1)})`,
    )
  }
} finally {
  for (const store of Object.values(stores)) await store.close()
  await server.stop()
}
