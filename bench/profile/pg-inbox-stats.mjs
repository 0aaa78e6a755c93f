/**
 * The PostgreSQL inbox's `stats()` (what the console, the CLI's `inbox stats` and the OpenTelemetry
 * gauges read) on an inbox table that holds a week of done entries (issue 48), and the console's
 * count of them. The table is filled with `entries` entries through the inbox's own layout
 * (random UUID keys, 600-byte payloads, done ones expiring over the coming week; one in a thousand
 * dead, one in a thousand pending), then VACUUM ANALYZE (what autovacuum does to a table that
 * grew). Then `rounds` rounds, each build in turn (A B A B): `stats()` timed through the store (its
 * deadlines and statement limit), and the statements' plans. Prints the medians and each build's
 * failures (a statement past the store's limit fails with `timeout`).
 *
 *   node bench/profile/pg-inbox-stats.mjs [entries=10000000] [rounds=5]
 *   CORE_DISTS=/tmp/old-dist,packages/core/dist node bench/profile/pg-inbox-stats.mjs
 *
 * CORE_DISTS: folders of core builds (each with postgres.js), measured on the same filled table.
 * Build first (`npx -y pnpm@12 build`).
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { startPostgres } from '../src/services.js'

const entries = Number(process.argv[2] ?? 10_000_000)
const rounds = Number(process.argv[3] ?? 5)
const CHUNK = 500_000

const server = await startPostgres()
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()
const builds = []
for (const dir of process.env.CORE_DISTS ? process.env.CORE_DISTS.split(',') : ['']) {
  const from = dir ? pathToFileURL(resolve(dir, 'postgres.js')).href : '@email-webhooks/core/postgres'
  const { PostgresDedupStore } = await import(from)
  const warnings = []
  const store = new PostgresDedupStore({ connectionString: server.url, warn: (line) => warnings.push(line) })
  // Makes the tables (the first build's layout; an older build reads the same table).
  await store.inbox.stats()
  builds.push({ name: dir || '@email-webhooks/core', store, warnings, times: [], failures: new Map() })
}
const indexes = (await admin.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'email_webhook_dedup_inbox' ORDER BY 1`)).rows
console.log(`inbox indexes: ${indexes.map((row) => row.indexname).join(', ')}`)

const started = Date.now()
for (let from = 0; from < entries; from += CHUNK) {
  const to = Math.min(entries, from + CHUNK) - 1
  await admin.query(
    `INSERT INTO email_webhook_dedup_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at, ended_at, expires_at)
     SELECT 'default:' || gen_random_uuid(), 'email.delivered', repeat('x', 600), 1,
       CASE WHEN g % 1000 = 0 THEN 'dead' WHEN g % 1000 = 1 THEN 'pending' ELSE 'done' END, 1,
       now() - random() * interval '7 days', now(), now() - random() * interval '7 days', now() + random() * interval '7 days'
     FROM generate_series($1::int, $2::int) g ORDER BY random()`,
    [from, to],
  )
}
await admin.query('VACUUM ANALYZE email_webhook_dedup_inbox')
const size = Number((await admin.query(`SELECT pg_total_relation_size('email_webhook_dedup_inbox') AS n`)).rows[0].n)
console.log(
  `${entries.toLocaleString('en')} entries in ${Math.round((Date.now() - started) / 1000)} s, ${Math.round(size / 1024 / 1024)} MiB with indexes`,
)

for (let round = 0; round < rounds; round++) {
  for (const build of builds) {
    const at = performance.now()
    try {
      const stats = await build.store.inbox.stats()
      build.times.push(performance.now() - at)
      build.last = stats
    } catch (error) {
      const key = `${error.code}: ${String(error.message).slice(0, 80)}`
      build.failures.set(key, (build.failures.get(key) ?? 0) + 1)
    }
  }
}
const median = (values) => {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}
for (const build of builds) {
  const ms = median(build.times)
  console.log(
    `${build.name}: stats() median ${ms === null ? '-' : `${ms.toFixed(1)} ms`} over ${build.times.length} of ${rounds}; ${JSON.stringify(build.last ?? null)}`,
  )
  for (const [key, n] of build.failures) console.log(`  failed ${n}x: ${key}`)
  for (const line of build.warnings) console.log(`  warned: ${line.slice(0, 160)}`)
}
// The console's count of done entries remembered (one statement over the done index).
const counted = []
for (let round = 0; round < rounds; round++) {
  const at = performance.now()
  await admin.query(`SELECT count(*)::int AS n FROM email_webhook_dedup_inbox WHERE state = 'done' AND expires_at > now()`)
  counted.push(performance.now() - at)
}
console.log(`console's count of done entries: median ${median(counted).toFixed(0)} ms (no statement limit on this connection)`)
for (const build of builds) await build.store.close()
await admin.end()
await server.stop()
