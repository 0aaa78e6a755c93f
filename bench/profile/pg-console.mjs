/**
 * The operator's console on a PostgreSQL store that holds a week of records (issue 48): what its
 * overview costs, and what it does to the deliveries arriving meanwhile. The store's table is filled
 * with `records` done records (../src/fill.js, random keys, expiries over the coming week), then two
 * phases of `seconds` each, with claim + complete traffic on the same store (10 in flight, as a
 * receiver's): without the console, then with its overview opened back to back (one at a time,
 * through the console's fetch handler, no HTTP). Prints each overview's time and answer, the
 * traffic's events/s, p99 and slowest claim + complete, its failures, and the most connections the
 * console's reads held at once (pg_stat_activity, sampled every 20 ms).
 *
 *   node bench/profile/pg-console.mjs [records=10000000] [seconds=20]
 *   CORE_DISTS=/tmp/old-dist,packages/core/dist node bench/profile/pg-console.mjs
 *
 * CORE_DISTS: folders of core builds (each with console.js and postgres.js) measured on the same
 * filled table, in turn A B A B. Build first (`npx -y pnpm@12 build`).
 */
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { fillPostgresTable } from '../src/fill.js'
import { startPostgres } from '../src/services.js'

const records = Number(process.argv[2] ?? 10_000_000)
const seconds = Number(process.argv[3] ?? 20)
const OPTIONS = { leaseMs: 30_000, retentionMs: 7 * 24 * 3600_000 }
const PASSWORD = 'profile-console-password'
const AUTH = `Basic ${btoa(`ops:${PASSWORD}`)}`

const server = await startPostgres()
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()
const warnings = []
const builds = await Promise.all(
  (process.env.CORE_DISTS ? process.env.CORE_DISTS.split(',') : ['']).map(async (dir) => {
    const from = (name) => (dir ? pathToFileURL(resolve(dir, `${name}.js`)).href : `@email-webhooks/core/${name}`)
    const { PostgresDedupStore } = await import(from('postgres'))
    const { emailWebhookConsole } = await import(from('console'))
    const store = new PostgresDedupStore({ connectionString: server.url, warn: (line) => warnings.push(line) })
    const first = await store.claim(`default:${randomUUID()}`, OPTIONS)
    await store.complete(first.claim, OPTIONS)
    return {
      name: dir || '@email-webhooks/core',
      store,
      handler: emailWebhookConsole({ store, auth: { username: 'ops', password: PASSWORD } }),
    }
  }),
)
const fillStarted = Date.now()
await fillPostgresTable(admin, { table: 'email_webhook_dedup', count: records })
console.log(`${records.toLocaleString('en')} done records in ${Math.round((Date.now() - fillStarted) / 1000)} s`)

/** Claim + complete on 10 lanes until `until`: per-event ms, and failures by message. */
async function traffic(store, until) {
  const times = []
  const failures = new Map()
  const lane = async () => {
    while (performance.now() < until) {
      const started = performance.now()
      try {
        const claimed = await store.claim(`default:${randomUUID()}`, OPTIONS)
        if (claimed.status !== 'acquired') throw new Error(`claim answered ${claimed.status}`)
        if (!(await store.complete(claimed.claim, OPTIONS))) throw new Error('complete answered false')
        times.push(performance.now() - started)
      } catch (error) {
        const key = String(error?.message ?? error).slice(0, 120)
        failures.set(key, (failures.get(key) ?? 0) + 1)
      }
    }
  }
  await Promise.all(Array.from({ length: 10 }, lane))
  return { times, failures }
}

/** The overview opened back to back until `until`: each one's ms and status. */
async function overviews(handler, until) {
  const opened = []
  while (performance.now() < until) {
    const started = performance.now()
    const response = await handler(new Request('http://profile/', { headers: { authorization: AUTH } }))
    const body = await response.text()
    const failed = response.status !== 200 || /did not answer|queryTimeoutMs|timeout: |connection_failed/.test(body)
    const figure = /Events remembered as done<\/th><td>([^<]*)</.exec(body)?.[1]
    opened.push({ ms: performance.now() - started, status: response.status, failed, figure })
  }
  return opened
}

/** The most connections running a console statement at once, sampled every 20 ms until `until`. */
async function consoleConnections(until) {
  let most = 0
  while (performance.now() < until) {
    const { rows } = await admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE state = 'active' AND pid <> pg_backend_pid() AND query ~ 'count\\(\\*\\)|pg_total_relation_size'`,
    )
    most = Math.max(most, rows[0].n)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return most
}

function summary(label, { times, failures }, elapsed) {
  times.sort((a, b) => a - b)
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? Number.NaN
  const failed = [...failures].map(([message, n]) => `${n} × ${message}`).join('; ') || 'none'
  console.log(
    `${label}: ${Math.round(times.length / elapsed)} events/s, claim + complete p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, slowest ${at(1).toFixed(1)} ms; failures: ${failed}`,
  )
}

for (const build of builds) await traffic(build.store, performance.now() + 2_000)
const turns = builds.length > 1 ? [...builds, ...builds] : builds
for (const build of turns) {
  console.log(`${build.name}:`)
  const quiet = await traffic(build.store, performance.now() + seconds * 1000)
  summary('  without the console', quiet, seconds)
  const until = performance.now() + seconds * 1000
  const [busy, opened, most] = await Promise.all([traffic(build.store, until), overviews(build.handler, until), consoleConnections(until)])
  summary('  with the overview opened back to back', busy, seconds)
  const ms = opened.map((o) => o.ms).sort((a, b) => a - b)
  console.log(
    `  overview: opened ${opened.length} times, median ${ms[Math.floor(ms.length / 2)]?.toFixed(0)} ms, slowest ${ms.at(-1)?.toFixed(0)} ms, failed ${opened.filter((o) => o.failed).length}; console statements running at once, at most ${most}; last said: ${opened.at(-1)?.figure ?? '(no figure)'}`,
  )
}
if (warnings.length > 0) console.log(`store warnings: ${warnings.length}, first: ${warnings[0]}`)
for (const build of builds) await build.store.close()
await admin.end()
await server.stop()
process.exit(0)
