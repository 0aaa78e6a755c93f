/**
 * Does PostgreSQL's cost per event grow with the retained records because of the store's layout
 * (issue 48)? Claim + complete on tables of each layout, empty and holding `retained` done records
 * (../src/fill.js), 10 in flight on one pool of 10, rounds interleaved, no HTTP:
 *
 *   ours      the store's table as it creates it (primary key and the `expires_at` index the purge
 *             reads) with the store's claim and complete, copied from
 *             packages/core/src/store/postgres/schema.ts (the complete moves `expires_at`, an indexed
 *             column, so its update is never HOT)
 *   no-index  the same table without the `expires_at` index: the same statements, every complete
 *             HOT (a purge would then have to find expired rows another way; none runs here)
 *   hand      the hand-written receiver's `(id text PRIMARY KEY, seen_at)` with one SELECT and one
 *             INSERT … ON CONFLICT DO NOTHING an event (../src/hand/dedup.js)
 *
 * Every statement is a named prepared statement, as the store's are. Per round: events/s, the
 * database server's CPU µs per event (/proc, 10 ms ticks), the share of updates that were HOT
 * (pg_stat_user_tables), the WAL written per event (bytes between `pg_current_wal_lsn()` before and
 * after: exact, no statistics delay) and the checkpoints that started during the round
 * (pg_stat_bgwriter). Medians of the rounds. BENCH_PG_OPTIONS (bench/src/services.js) tries server
 * settings, e.g. `-c wal_compression=lz4` or `-c max_wal_size=8GB`.
 *
 *   node bench/profile/pg-layouts.mjs [retained=10000000] [rounds=5] [events=20000]
 *   LAYOUTS=ours,hand node bench/profile/pg-layouts.mjs 1000000
 */
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { fillPostgresHand, fillPostgresTable } from '../src/fill.js'
import { startPostgres } from '../src/services.js'

const retained = Number(process.argv[2] ?? 10_000_000)
const rounds = Number(process.argv[3] ?? 5)
const events = Number(process.argv[4] ?? 20_000)
const layouts = (process.env.LAYOUTS ?? 'ours,no-index,hand').split(',')
const LEASE_MS = 30_000
const RETENTION_MS = 7 * 24 * 3600_000

const server = await startPostgres()
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()
const pool = new pg.Pool({ connectionString: server.url, max: 10 })

/** Creates `table` in `layout`, empty. */
async function create(layout, table) {
  if (layout === 'hand') {
    await admin.query(`CREATE TABLE ${table} (id text PRIMARY KEY, seen_at timestamptz NOT NULL DEFAULT now())`)
    return
  }
  await admin.query(`CREATE TABLE ${table} (
    key text PRIMARY KEY, done boolean NOT NULL, token text, attempt integer NOT NULL, expires_at timestamptz NOT NULL)`)
  if (layout === 'ours') await admin.query(`CREATE INDEX ${table}_expires_at ON ${table} (expires_at)`)
}

/** One event on `table` (`layout`): claim then complete, or the hand-written SELECT then INSERT. */
function eventOn(layout, table) {
  if (layout === 'hand') {
    const seen = { name: `seen_${table}`, text: `SELECT 1 FROM ${table} WHERE id = $1` }
    const record = { name: `record_${table}`, text: `INSERT INTO ${table} (id) VALUES ($1) ON CONFLICT DO NOTHING` }
    return async (id) => {
      if ((await pool.query({ ...seen, values: [id] })).rowCount) throw new Error('a fresh id was seen')
      await pool.query({ ...record, values: [id] })
    }
  }
  const expiresIn = (param) => `clock_timestamp() + ${param}::float8 * interval '1 millisecond'`
  const claim = {
    name: `claim_${table}`,
    text: `WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)), cur AS (
  SELECT done, ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::float8 AS left_ms FROM ${table}
  WHERE key = $1 AND expires_at > clock_timestamp() AND (done OR token IS NOT NULL)),
ins AS (
  INSERT INTO ${table} AS d (key, done, token, attempt, expires_at)
  SELECT $1, false, $2, 1, ${expiresIn('$3')} WHERE NOT EXISTS (SELECT 1 FROM cur)
  ON CONFLICT (key) DO UPDATE SET
    attempt = CASE WHEN d.done THEN 1 ELSE d.attempt + 1 END,
    done = false, token = excluded.token, expires_at = excluded.expires_at
  WHERE d.expires_at <= clock_timestamp() OR (NOT d.done AND d.token IS NULL)
  RETURNING attempt)
SELECT ins.attempt, cur.done, cur.left_ms FROM lazy LEFT JOIN ins ON true LEFT JOIN cur ON true`,
  }
  const complete = {
    name: `complete_${table}`,
    text: `WITH durable AS (SELECT set_config('synchronous_commit', 'on', true))
UPDATE ${table} SET done = true, token = NULL, expires_at = ${expiresIn('$3')}
FROM durable WHERE key = $1 AND token = $2 AND NOT done`,
  }
  return async (id) => {
    const key = `default:${id}`
    const token = randomUUID()
    if ((await pool.query({ ...claim, values: [key, token, LEASE_MS] })).rows[0].attempt !== 1) throw new Error('not acquired')
    if ((await pool.query({ ...complete, values: [key, token, RETENTION_MS] })).rowCount !== 1) throw new Error('not completed')
  }
}

async function updates(table) {
  await admin.query('SELECT pg_stat_force_next_flush()')
  const row = (await admin.query('SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1', [table])).rows[0]
  return { all: Number(row?.n_tup_upd ?? 0), hot: Number(row?.n_tup_hot_upd ?? 0) }
}

async function walAndCheckpoints() {
  const row = (
    await admin.query(
      `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS lsn, (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter) AS checkpoints`,
    )
  ).rows[0]
  return { lsn: Number(row.lsn), checkpoints: Number(row.checkpoints) }
}

async function round(target, n) {
  let next = 0
  const lane = async () => {
    while (next++ < n) await target.event(randomUUID())
  }
  const before = await updates(target.table)
  const wal = await walAndCheckpoints()
  const db = server.cpuMicros()
  const started = performance.now()
  await Promise.all(Array.from({ length: 10 }, lane))
  const seconds = (performance.now() - started) / 1000
  const dbMicros = (server.cpuMicros() - db) / n
  const walAfter = await walAndCheckpoints()
  // The statistics collector reports at most every 500 ms.
  await new Promise((resolve) => setTimeout(resolve, 600))
  const after = await updates(target.table)
  const changed = after.all - before.all
  return {
    rate: n / seconds,
    db: dbMicros,
    hot: changed ? (after.hot - before.hot) / changed : 0,
    wal: (walAfter.lsn - wal.lsn) / n,
    checkpoints: walAfter.checkpoints - wal.checkpoints,
  }
}

const targets = []
for (const layout of layouts) {
  for (const size of retained > 0 ? [0, retained] : [0]) {
    const table = `layout_${layout.replace('-', '_')}_${size}`
    await create(layout, table)
    if (size > 0) {
      const started = Date.now()
      if (layout === 'hand') await fillPostgresHand(admin, { table, count: size })
      else await fillPostgresTable(admin, { table, count: size })
      console.error(`${table}: ${size} records in ${Math.round((Date.now() - started) / 1000)} s`)
    }
    targets.push({ layout, size, table, event: eventOn(layout, table), rows: [] })
  }
}
for (const target of targets) await round(target, Math.min(events, 2_000))
for (let r = 0; r < rounds; r++) {
  for (const target of targets) {
    const row = await round(target, events)
    target.rows.push(row)
    console.error(
      `round ${r + 1} ${target.layout} ${target.size}: ${Math.round(row.rate)} events/s, DB ${row.db.toFixed(1)} µs/event, WAL ${Math.round(row.wal)} B/event, ${row.checkpoints} checkpoints`,
    )
  }
}
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]
console.log(`server options: ${process.env.BENCH_PG_OPTIONS ?? '(defaults)'}`)
console.log('| Layout | retained | events/s | DB CPU µs/event | HOT updates | WAL bytes/event | checkpoints a round | size |')
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
for (const target of targets) {
  const size = (await admin.query('SELECT pg_size_pretty(pg_total_relation_size($1)) AS s', [target.table])).rows[0].s
  const m = (field) => median(target.rows.map((row) => row[field]))
  console.log(
    `| ${target.layout} | ${target.size.toLocaleString('en')} | ${Math.round(m('rate')).toLocaleString('en')} | ${m('db').toFixed(1)} | ${(100 * m('hot')).toFixed(0)} % | ${Math.round(m('wal')).toLocaleString('en')} | ${m('checkpoints')} | ${size} |`,
  )
}
await pool.end()
await admin.end()
await server.stop()
process.exit(0)
