/**
 * The soak (npm run soak -- --minutes 30; not in npm test): two receiver processes, Express with
 * the default SQLite store and Express with PostgreSQL, each under distinct signed events plus
 * 10 % duplicates (of events acknowledged within the last half retention) from its own load
 * process, with a short retention (2 min by default) so that
 * the stores reach their steady state early. Every minute it prints, per store, the receiver's
 * RSS and heap, the rows of the dedup tables and the size of the store's files (SQLite: the
 * database, its WAL and shared memory; PostgreSQL: the table with its index and TOAST), and the
 * load's answers. Once the retention is reached all of them must stay flat.
 *
 * Environment (set by scripts/faults.mjs from its flags): FAULTS_SOAK_MINUTES (default 3),
 * FAULTS_SOAK_RATE (new events a second per store, default 50), FAULTS_SOAK_RETENTION_MS
 * (default 120,000), FAULTS_SOAK_OUT (a file for the samples as JSON lines).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { appendFileSync, existsSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, expect, it } from 'vitest'
import { type RunningServer, startPostgres } from '../services/servers.js'
import { readJournal } from './figures.js'
import { killAll, next, type ReceiverProcess, startReceiver } from './processes.js'
import { scratch, sleep } from './scenario.js'

const MINUTES = Number(process.env.FAULTS_SOAK_MINUTES ?? 3)
const PER_SECOND = Number(process.env.FAULTS_SOAK_RATE ?? 50)
const RETENTION_MS = Number(process.env.FAULTS_SOAK_RETENTION_MS ?? 120_000)
const DUPLICATES = 0.1
const TABLE = 'email_webhook_dedup'
const MiB = 1024 * 1024
const LOAD = join(dirname(fileURLToPath(import.meta.url)), 'soak-load.mjs')

/** better-sqlite3 (no type package here), opened read-only to count rows beside the running receiver. */
interface ReadOnlyDatabase {
  prepare(sql: string): { get(): unknown }
  close(): void
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (
  path: string,
  options: { readonly: boolean; fileMustExist: boolean },
) => ReadOnlyDatabase

const file = scratch('soak')
let postgres: RunningServer | undefined
const loads: ChildProcess[] = []
afterAll(async () => {
  for (const load of loads) load.kill('SIGKILL')
  killAll()
  await postgres?.stop()
})

interface Sample {
  minute: number
  /** Answers other than 200, by status and code (e.g. a 503 store_unavailable in a load spike, retried). */
  non2xxCodes: Record<string, number>
  store: 'sqlite' | 'postgres'
  rssMiB: number
  heapMiB: number
  rows: number
  leaseRows: number
  filesMiB: number
  requests: number
  events: number
  duplicates: number
  non2xx: number
  p99Ms: number
}

const round1 = (n: number) => Math.round(n * 10) / 10
const size = (path: string) => (existsSync(path) ? statSync(path).size : 0)

function sqliteFigures(path: string): { rows: number; leaseRows: number; filesMiB: number } {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
    const files = size(path) + size(`${path}-wal`) + size(`${path}-shm`)
    return { rows: count(`${TABLE}_done`), leaseRows: count(`${TABLE}_lease`), filesMiB: round1(files / MiB) }
  } finally {
    db.close()
  }
}

async function postgresFigures(client: pg.Client): Promise<{ rows: number; leaseRows: number; filesMiB: number }> {
  const { rows } = await client.query(
    `SELECT count(*)::int AS rows, count(*) FILTER (WHERE NOT done)::int AS leases, pg_total_relation_size('${TABLE}')::bigint AS bytes FROM ${TABLE}`,
  )
  const row = rows[0] as { rows: number; leases: number; bytes: string }
  return { rows: row.rows, leaseRows: row.leases, filesMiB: round1(Number(row.bytes) / MiB) }
}

function startLoad(url: string, tag: string): Promise<ChildProcess> {
  const load = fork(LOAD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  loads.push(load)
  return next(load, 'ready').then(() => {
    load.send({ cmd: 'start', url, perSecond: PER_SECOND, duplicates: DUPLICATES, retentionMs: RETENTION_MS, tag })
    return load
  })
}

async function report(load: ChildProcess, cmd: 'report' | 'stop') {
  const answer = next(load, cmd === 'stop' ? 'stopped' : 'report', 60_000)
  load.send({ cmd })
  return answer
}

function line(s: Sample): string {
  return (
    `${s.store.padEnd(8)} rss ${s.rssMiB} MiB, heap ${s.heapMiB} MiB, rows ${s.rows} (${s.leaseRows} leases), files ${s.filesMiB} MiB; ` +
    `${s.requests} requests (${s.events} new, ${s.duplicates} duplicates), ${s.non2xx} non-2xx${
      s.non2xx > 0
        ? ` (${Object.entries(s.non2xxCodes)
            .map(([k, n]) => `${k} ×${n}`)
            .join(', ')})`
        : ''
    }, p99 ${s.p99Ms} ms`
  )
}

it(`soak for ${MINUTES} min: ${PER_SECOND} new events/s + ${DUPLICATES * 100} % duplicates on the default SQLite store and on PostgreSQL, retention ${RETENTION_MS / 1000} s: memory, rows and files flat once the retention is reached`, async () => {
  postgres = await startPostgres()
  const db = file('dedup.db')
  const options = { retentionMs: RETENTION_MS }
  // The receivers end themselves after lifetimeMs (so that a failed run never leaves them behind).
  const lifetimeMs = (MINUTES + 5) * 60_000
  const receivers: Record<Sample['store'], ReceiverProcess> = {
    sqlite: await startReceiver(
      {
        adapter: 'express',
        store: { kind: 'default', path: db },
        journal: file('sqlite.journal'),
        log: file('sqlite.log'),
        tag: 's',
        options,
        lifetimeMs,
      },
      { env: { EMAIL_WEBHOOKS_DB: db } },
    ),
    postgres: await startReceiver({
      adapter: 'express',
      store: { kind: 'postgres', url: postgres.url },
      journal: file('postgres.journal'),
      log: file('postgres.log'),
      tag: 'p',
      options,
      lifetimeMs,
    }),
  }
  const client = new pg.Client({ connectionString: postgres.url })
  await client.connect()
  const load = {
    sqlite: await startLoad(receivers.sqlite.url, 'sqlite'),
    postgres: await startLoad(receivers.postgres.url, 'postgres'),
  }
  const samples: Sample[] = []
  const totals: Partial<Record<Sample['store'], { events: number; acked: number; gaveUp: number }>> = {}
  const out = process.env.FAULTS_SOAK_OUT
  try {
    for (let minute = 1; minute <= MINUTES; minute++) {
      await sleep(60_000)
      for (const store of ['sqlite', 'postgres'] as const) {
        const usage = await receivers[store].command({ cmd: 'usage' })
        const traffic = await report(load[store], minute === MINUTES ? 'stop' : 'report')
        const tables = store === 'sqlite' ? sqliteFigures(db) : await postgresFigures(client)
        const sample: Sample = {
          minute,
          store,
          rssMiB: round1(usage.rss / MiB),
          heapMiB: round1(usage.heapUsed / MiB),
          ...tables,
          requests: traffic.requests,
          events: traffic.events,
          duplicates: traffic.duplicates,
          non2xx: traffic.requests - (traffic.statuses['200'] ?? 0),
          non2xxCodes: Object.fromEntries(Object.entries(traffic.statuses as Record<string, number>).filter(([key]) => key !== '200')),
          p99Ms: traffic.p99Ms,
        }
        samples.push(sample)
        if (minute === MINUTES) totals[store] = traffic.total
        console.log(`soak minute ${minute}: ${line(sample)}`)
        if (out) appendFileSync(out, `${JSON.stringify(sample)}\n`)
      }
    }
  } finally {
    await client.end()
  }
  // Every event acknowledged in the end (a non-2xx in a load spike is retried), none handled twice.
  for (const store of ['sqlite', 'postgres'] as const) {
    const total = totals[store]
    expect(total?.gaveUp, `${store} events given up`).toBe(0)
    expect(total?.acked, `${store} events acknowledged`).toBe(total?.events)
    const runs = readJournal(file(`${store}.journal`))
    expect([...runs.values()].filter((r) => r.ended.length > 1).length, `${store} events handled twice`).toBe(0)
  }
  // Flat once the retention is reached: compare the first minute past it (plus one, for the
  // purge to catch up) with the last.
  const settledFrom = Math.ceil(RETENTION_MS / 60_000) + 2
  if (MINUTES < settledFrom + 2) return
  const expectedRows = PER_SECOND * (RETENTION_MS / 1000)
  for (const store of ['sqlite', 'postgres'] as const) {
    const flat = samples.filter((s) => s.store === store && s.minute >= settledFrom)
    const first = flat[0] as Sample
    const last = flat[flat.length - 1] as Sample
    expect(Math.max(...flat.map((s) => s.rows)), `${store} rows`).toBeLessThan(2.5 * expectedRows)
    expect(last.rssMiB - first.rssMiB, `${store} RSS growth`).toBeLessThan(48)
    expect(last.heapMiB - first.heapMiB, `${store} heap growth`).toBeLessThan(24)
    expect(last.filesMiB, `${store} files`).toBeLessThan(first.filesMiB * 1.5 + 8)
    // Retried, but rare: a 503 when the store answers after storeTimeoutMs in a load spike.
    expect(
      flat.reduce((n, s) => n + s.non2xx, 0),
      `${store} non-2xx`,
    ).toBeLessThan(flat.reduce((n, s) => n + s.requests, 0) / 1000)
  }
}, 0)
