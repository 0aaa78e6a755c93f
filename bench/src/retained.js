/**
 * How cost grows with retained data (issue 48). Two parts, each on SQLite, PostgreSQL and Redis
 * (Redis expires keys by itself: no purge part):
 *
 * Retained: the store is filled with done records through its own layout (fill.js: SQL
 * `INSERT … SELECT` in a few transactions, Redis pipelined), to each size in turn (1 and 10
 * million by default), then the HTTP rounds of the HTTP bench (Hono, our adapter, pinned server and
 * load generator, pre-signed pools, 10 connections) run against a server on the filled store and a
 * server on an empty one, interleaved (empty, filled, empty, filled, …), medians; req/s and server
 * CPU per event (plus the database server's, PostgreSQL and Redis) of filled against empty. Then
 * the bytes: SQLite pages by table (dbstat), PostgreSQL heap and index sizes, Redis `used_memory`
 * per key, each against the hand-written receiver's minimal table filled with as many records.
 *
 * Purge: a store holding a backlog of expired records (1 million by default) against an empty
 * one, in interleaved HTTP rounds: p99 and the slowest answer, and how many expired rows the
 * store's own purge removed per second against the arrivals; then at the store level (no HTTP,
 * `--purge-concurrency` claim + complete lanes, as fast as the store goes) the same with each
 * claim's latency timed: its slowest is the longest stall a purge step caused.
 *
 *   node bench/src/retained.js                                   everything; writes bench/RESULTS.md
 *   node bench/src/retained.js --only sqlite --sizes 100000 --purge 100000 --out /tmp/r.md
 *   node bench/src/retained.js --smoke                           tiny sizes and rounds, writes nothing
 *
 * Options: `--only` (sqlite,postgres,redis), `--sizes` (ascending), `--redis-sizes` (default: as
 * `--sizes`), `--hand-max` (the largest size at which the hand-written table is filled too),
 * `--purge` (backlog size; 0 skips), `--rounds`, `--seconds`, `--purge-rounds`, `--out`,
 * `--json`, `--previous` (a JSON of an earlier run: rows more than 10 % worse are called out).
 * Build first (`npx -y pnpm@12 build`): the bench imports the built packages.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Database from 'better-sqlite3'
import { Redis } from 'ioredis'
import pg from 'pg'
import { fillPostgresHand, fillPostgresTable, fillRedisHand, fillRedisKeys, fillSqliteHand, fillSqliteStore, WEEK_MS } from './fill.js'
import { median } from './harness.js'
import { ipcChild, round, startServer } from './http.js'
import { detectPinning, spawnNode } from './pinning.js'
import { compareRuns, formatRegressions, machineShift } from './regress.js'
import { emitSection, parseArgs } from './section.js'
import { lazyServices } from './services.js'

const here = dirname(fileURLToPath(import.meta.url))
const benchDir = join(here, '..')
const args = parseArgs(process.argv.slice(2))
const SMOKE = args.smoke === 'true'
const list = (text) => text.split(',').map(Number)
const KINDS = (args.only ?? 'sqlite,postgres,redis').split(',')
const PARTS = (args.parts ?? 'retained,purge').split(',')
const SIZES = list(args.sizes ?? (SMOKE ? '2000,4000' : '1000000,10000000'))
const REDIS_SIZES = list(args['redis-sizes'] ?? args.sizes ?? (SMOKE ? '2000' : '1000000,10000000'))
const HAND_MAX = Number(args['hand-max'] ?? Number.POSITIVE_INFINITY)
const PURGE = Number(args.purge ?? (SMOKE ? 2000 : 1_000_000))
const ROUNDS = Number(args.rounds ?? (SMOKE ? 1 : 3))
const SECONDS = Number(args.seconds ?? (SMOKE ? 0.5 : 5))
const WARMUP_SECONDS = SMOKE ? 0.2 : 2
const PURGE_ROUNDS = Number(args['purge-rounds'] ?? (SMOKE ? 1 : 5))
const PURGE_CONCURRENCY = Number(args['purge-concurrency'] ?? 20)
const PURGE_STORE_SECONDS = SMOKE ? 0.5 : 5
const MAX_POOL = SMOKE ? 200 : undefined
const OUT = args.out ?? (SMOKE || args.only || args.sizes || args.parts ? undefined : join(benchDir, 'RESULTS.md'))
const HEADING = '## Retained data and purge under load (issue 48)'
const NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL', redis: 'Redis' }
const MODES = { sqlite: 'sqlite', postgres: 'postgres', redis: 'redis' }
const FRAMEWORK = 'hono'
/** Events a second the Redis `maxmemory` figure is worked out for (the issue's example). */
const RATE_FOR_MEMORY = 20
const log = (line) => process.stderr.write(`${line}\n`)
const fmt = (n, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

const pinning = detectPinning()
const services = lazyServices()
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-retained-'))
const started = new Date()
const startLoad = loadavg()[0]
const results = { started: started.toISOString(), retained: [], bytes: [], purge: [], purgeStore: [], pinning: pinning.note }

const loadChild = spawnNode(pinning, pinning.loadCore, [join(here, 'loadgen.js')], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
const load = ipcChild(loadChild, 'load generator')

/** Interleaved rounds of `servers` ({ name, server }), after a warm-up of each; returns each one's rounds. */
async function rounds(servers, count, seconds, between, afterWarmup) {
  for (const { server } of servers)
    await round(load, server, { pinning, maxPool: MAX_POOL, connections: 10, tool: 'raw', kind: 'distinct', seconds: WARMUP_SECONDS })
  await afterWarmup?.()
  const out = Object.fromEntries(servers.map(({ name }) => [name, []]))
  for (let r = 0; r < count; r++) {
    for (const { name, server } of servers) {
      const before = between ? await between(name) : undefined
      const row = await round(load, server, { pinning, maxPool: MAX_POOL, connections: 10, tool: 'raw', kind: 'distinct', seconds })
      if (between) row.between = { before, after: await between(name) }
      out[name].push(row)
      log(
        `  ${name.padEnd(10)} round ${r + 1}: ${fmt(row.perSecond)} req/s, ${row.cpuPerRequestUs.toFixed(1)} µs/req${row.dbCpuPerRequestUs === undefined ? '' : ` + DB ${row.dbCpuPerRequestUs.toFixed(1)}`}, p99 ${(row.p99Us / 1000).toFixed(2)} ms, max ${(row.maxUs / 1000).toFixed(1)} ms, others ${Math.round((row.others ?? 0) * 100)} %${row.flagged ? ' ⚠ flagged' : ''}${row.between ? `, expired left ${fmt(row.between.before)} → ${fmt(row.between.after)}` : ''}`,
      )
    }
  }
  return out
}

/** Medians of one side's rounds and its ratios against `base` (each the median of the rounds' own ratios). */
function compare(base, side) {
  const m = (rows, key) => median(rows.map((row) => row[key] ?? 0))
  const total = (row) => row.cpuPerRequestUs + (row.dbCpuPerRequestUs ?? 0)
  const paired = side.map((row, i) => [base[i], row])
  return {
    perSecond: [m(base, 'perSecond'), m(side, 'perSecond')],
    cpuUs: [m(base, 'cpuPerRequestUs'), m(side, 'cpuPerRequestUs')],
    dbCpuUs: side[0].dbCpuPerRequestUs === undefined ? undefined : [m(base, 'dbCpuPerRequestUs'), m(side, 'dbCpuPerRequestUs')],
    p99Us: [m(base, 'p99Us'), m(side, 'p99Us')],
    maxUs: [Math.max(...base.map((row) => row.maxUs)), Math.max(...side.map((row) => row.maxUs))],
    ratio: median(paired.map(([b, s]) => s.perSecond / b.perSecond)),
    cpuRatio: median(paired.map(([b, s]) => total(s) / Math.max(total(b), 1e-9))),
    p99Ratio: median(paired.map(([b, s]) => s.p99Us / Math.max(b.p99Us, 1))),
    othersMax: Math.max(0, ...[...base, ...side].map((row) => row.others ?? 0)),
    flagged: [...base, ...side].filter((row) => row.flagged).length,
  }
}

// ---------------------------------------------------------------- the stores' handles

/** `value`, once every dirty page of the machine is on disk (`sync`). */
function flushed(value) {
  execFileSync('sync')
  return value
}

/** A filled store of `kind` and what the bench needs of it: fill more, measure its bytes, a server's env. */
async function filledStore(kind, name) {
  if (kind === 'sqlite') {
    const path = join(dir, `${name}.db`)
    await new SqliteDedupStore({ path }).close()
    const db = new Database(path)
    // Only for the fill: a large page cache makes random-order inserts fast. The store's own connection keeps its default.
    db.pragma('cache_size = -1000000')
    const hand = new Database(join(dir, `${name}-hand.db`))
    hand.pragma('journal_mode = WAL')
    hand.pragma('cache_size = -1000000')
    return {
      env: { EMAIL_WEBHOOKS_DB: path },
      handEnv: { EMAIL_WEBHOOKS_DB: join(dir, `${name}-hand.db`) },
      // Each fill ends with the OS's dirty pages written out (sync): the server's first checkpoint
      // syncs the file and would otherwise wait for the fill's tens of MiB to reach the disk (a
      // stall of the first round, not of the store).
      fill: async (count, expired = false) => flushed(await fillSqliteStore(db, { path, count, expired })),
      fillHand: (count) => flushed(fillSqliteHand(hand, { count })),
      expiredLeft: () => db.prepare('SELECT count(*) FROM email_webhook_dedup_done WHERE expires_at <= ?').pluck().get(Date.now()),
      // The hand-written table exists once it was filled (not with --hand-max below the first size).
      bytes: (_count, handCount) => ({
        ours: sqliteBytes(db, path),
        hand: handCount > 0 ? sqliteBytes(hand, join(dir, `${name}-hand.db`)) : undefined,
      }),
      store: () => new SqliteDedupStore({ path, durability: 'full' }),
      close() {
        db.close()
        hand.close()
      },
    }
  }
  if (kind === 'postgres') {
    const { url } = await services.get('postgres')
    const store = new PostgresDedupStore({ connectionString: url, table: name })
    await store.lookup('default:none') // the store creates its tables
    await store.close()
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    const handTable = `${name}_hand`
    return {
      env: { BENCH_PG_TABLE: name },
      handEnv: { BENCH_HAND_TABLE: handTable },
      client,
      fill: (count, expired = false) => fillPostgresTable(client, { table: name, count, expired }),
      fillHand: (count) => fillPostgresHand(client, { count, table: handTable }),
      expiredLeft: async () => Number((await client.query(`SELECT count(*) FROM ${name} WHERE expires_at <= now()`)).rows[0].count),
      // The hand-written table exists once it was filled (not with --hand-max below the first size).
      bytes: async (_count, handCount) => ({
        ours: await postgresBytes(client, name),
        hand: handCount > 0 ? await postgresBytes(client, handTable) : undefined,
      }),
      store: () => new PostgresDedupStore({ connectionString: url, table: name }),
      close: () => client.end(),
    }
  }
  const { url } = await services.get('redis')
  const client = new Redis(url)
  const prefix = `${name}:`
  // Hand-written keys are `hand:<id>`: one fill of them per run (their memory is measured as they are written).
  return {
    env: { BENCH_REDIS_PREFIX: prefix },
    client,
    async fill(count) {
      // Only for the fill: AOF writes without a sync each (the keys are in the AOF all the same), then back to `always`.
      await client.config('SET', 'appendfsync', 'no')
      try {
        const before = await usedMemory(client)
        const written = await fillRedisKeys(client, { prefix, count })
        this.memory = (this.memory ?? 0) + ((await usedMemory(client)) - before)
        return written
      } finally {
        await client.config('SET', 'appendfsync', 'always')
      }
    },
    async fillHand(count) {
      await client.config('SET', 'appendfsync', 'no')
      try {
        const before = await usedMemory(client)
        const written = await fillRedisHand(client, { count })
        this.handMemory = (this.handMemory ?? 0) + ((await usedMemory(client)) - before)
        return written
      } finally {
        await client.config('SET', 'appendfsync', 'always')
      }
    },
    async bytes(count, handCount) {
      const aof = await aofBytes(client)
      return {
        ours: { total: this.memory, perRecord: this.memory / count, aofTotal: aof },
        hand: this.handMemory === undefined ? undefined : { total: this.handMemory, perRecord: this.handMemory / handCount },
      }
    },
    close: () => client.disconnect(),
  }
}

async function usedMemory(client) {
  return Number((await client.info('memory')).match(/used_memory:(\d+)/)[1])
}

/** Bytes of the AOF files on disk (Redis 7: a directory of base and incremental files). */
async function aofBytes(client) {
  const [, folder] = await client.config('GET', 'dir')
  const [, sub] = await client.config('GET', 'appenddirname')
  try {
    return readdirSync(join(folder, sub)).reduce((sum, file) => sum + statSync(join(folder, sub, file)).size, 0)
  } catch {
    return undefined
  }
}

/** Pages by table and index (dbstat), the file's size, after a checkpoint. */
function sqliteBytes(db, path) {
  db.pragma('wal_checkpoint(TRUNCATE)')
  const pageSize = db.pragma('page_size', { simple: true })
  const pageCount = db.pragma('page_count', { simple: true })
  const objects = db
    .prepare(
      // The store's done records are in generations (a table each): counted as one, its depth the deepest's.
      `SELECT CASE WHEN name = 'email_webhook_dedup_now' OR name GLOB 'email_webhook_dedup_g[0-9]*' THEN 'email_webhook_dedup' ELSE name END AS name,
         count(*) AS pages, sum(pgsize) AS bytes, sum(payload) AS payload, sum(unused) AS unused, max(path) AS deepest
       FROM dbstat GROUP BY 1 HAVING count(*) > 1 ORDER BY bytes DESC`,
    )
    .all()
  const depth = (p) => (p ? p.split('/').length - 1 : 0)
  const rows = db
    .prepare(`SELECT count(*) FROM ${db.name.endsWith('-hand.db') ? 'hand_seen' : 'email_webhook_dedup_done'}`)
    .pluck()
    .get()
  return {
    rows,
    pageSize,
    pageCount,
    file: statSync(path).size,
    objects: objects.map((o) => ({
      name: o.name,
      pages: o.pages,
      bytes: o.bytes,
      payload: o.payload,
      unused: o.unused,
      depth: depth(o.deepest),
    })),
  }
}

async function postgresBytes(client, table) {
  const { rows } = await client.query(
    `SELECT pg_relation_size($1::regclass) AS heap, pg_indexes_size($1::regclass) AS indexes, pg_total_relation_size($1::regclass) AS total,
       (SELECT json_agg(json_build_object('name', indexrelid::regclass::text, 'bytes', pg_relation_size(indexrelid))) FROM pg_index WHERE indrelid = $1::regclass) AS each,
       (SELECT count(*) FROM ${table}) AS rows`,
    [table],
  )
  const row = rows[0]
  return { heap: Number(row.heap), indexes: Number(row.indexes), total: Number(row.total), each: row.each, rows: Number(row.rows) }
}

// ---------------------------------------------------------------- part 1: retained data

async function retained(kind) {
  const sizes = kind === 'redis' ? REDIS_SIZES : SIZES
  const filled = await filledStore(kind, 'retained')
  let have = 0
  let hand = 0
  try {
    for (const size of sizes) {
      log(`${NAMES[kind]}: filling to ${fmt(size)} done records …`)
      let t = performance.now()
      await filled.fill(size - have)
      const fillSeconds = (performance.now() - t) / 1000
      have = size
      let handSeconds
      if (size <= HAND_MAX) {
        t = performance.now()
        await filled.fillHand(size - hand)
        handSeconds = (performance.now() - t) / 1000
        hand = size
      }
      const bytes = await filled.bytes(have, hand)
      results.bytes.push({ kind, size, handSize: hand, fillSeconds, handSeconds, ...bytes })
      log(`  filled in ${fillSeconds.toFixed(1)} s; ${JSON.stringify(bytes).slice(0, 300)}`)
      const empty = await startServer(pinning, FRAMEWORK, MODES[kind], {
        services,
        env: kind === 'postgres' ? { BENCH_PG_TABLE: `empty_${size}` } : kind === 'redis' ? { BENCH_REDIS_PREFIX: `empty-${size}:` } : {},
      })
      const full = await startServer(pinning, FRAMEWORK, MODES[kind], { services, env: filled.env })
      // PostgreSQL, first size: the same table without its expires_at index (the purge's index, issue 48's decision).
      const noIndex = kind === 'postgres' && size === sizes[0] ? await tableWithoutIndex(filled.client, size) : undefined
      const bare = noIndex ? await startServer(pinning, FRAMEWORK, MODES[kind], { services, env: { BENCH_PG_TABLE: noIndex } }) : undefined
      // SQLite and PostgreSQL: the hand-written receiver (one SELECT, one insert that ignores a
      // conflict) on its own table filled as far, against an empty one: how much of the growth any
      // B-tree of random keys has.
      const handToo = filled.handEnv && hand === size
      const handMode = `hand-${MODES[kind]}`
      // Servers not started are undefined (not false), so that the `finally` below can stop what was.
      const handEmpty = handToo
        ? await startServer(pinning, FRAMEWORK, handMode, {
            services,
            env: kind === 'postgres' ? { BENCH_HAND_TABLE: `hand_empty_${size}` } : {},
          })
        : undefined
      const handFull = handToo ? await startServer(pinning, FRAMEWORK, handMode, { services, env: filled.handEnv }) : undefined
      try {
        const out = await rounds(
          [
            { name: 'empty', server: empty },
            { name: 'filled', server: full },
            ...(bare ? [{ name: 'no index', server: bare }] : []),
            ...(handToo
              ? [
                  { name: 'hand empty', server: handEmpty },
                  { name: 'hand filled', server: handFull },
                ]
              : []),
          ],
          ROUNDS,
          SECONDS,
        )
        const row = { kind, size, ...compare(out.empty, out.filled), rounds: out }
        if (bare) row.noIndex = compare(out.empty, out['no index'])
        if (handToo) row.hand = compare(out['hand empty'], out['hand filled'])
        if (kind === 'postgres') row.purgeScan = await purgeScan(filled.client, ['retained', ...(noIndex ? [noIndex] : [])])
        results.retained.push(row)
        log(`  ${NAMES[kind]} ${fmt(size)}: ${row.ratio.toFixed(2)}× req/s, ${row.cpuRatio.toFixed(2)}× CPU per event (with the DB's)`)
        if (row.noIndex)
          log(`  without the expires_at index: ${row.noIndex.ratio.toFixed(2)}× req/s, ${row.noIndex.cpuRatio.toFixed(2)}× CPU`)
        if (row.purgeScan) log(`  purge batch with nothing expired: ${JSON.stringify(row.purgeScan)}`)
      } finally {
        await Promise.all([empty.stop(), full.stop(), bare?.stop(), handEmpty?.stop(), handFull?.stop()])
      }
    }
  } finally {
    await filled.close()
  }
}

/** A second filled table of `count` done records, created by the store, with its expires_at index dropped. */
async function tableWithoutIndex(client, count) {
  const table = 'retained_noidx'
  const store = new PostgresDedupStore({ connectionString: (await services.get('postgres')).url, table })
  await store.lookup('default:none')
  await store.close()
  await fillPostgresTable(client, { table, count })
  await client.query(`DROP INDEX ${table}_expires_at`)
  return table
}

/** The purge's first batch (its SELECT, as the store sends it) with EXPLAIN ANALYZE: the time and the plan's top node, per table. */
async function purgeScan(client, tables) {
  const out = {}
  for (const table of tables) {
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE, FORMAT JSON) SELECT key FROM ${table} WHERE expires_at <= now() AND (done OR token IS NULL) ORDER BY expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED`,
    )
    const plan = rows[0]['QUERY PLAN'][0]
    const nodes = []
    for (let node = plan.Plan; node; node = node.Plans?.[0]) nodes.push(node['Node Type'])
    out[table] = { ms: plan['Execution Time'], plan: nodes.join(' ← ') }
  }
  return out
}

// ---------------------------------------------------------------- part 2: purge under load

/** Claim + complete lanes as fast as the store goes for `seconds`; each claim timed. */
async function storeLoad(store, seconds) {
  const latencies = []
  const deadline = performance.now() + seconds * 1000
  let events = 0
  const options = { leaseMs: 30_000, retentionMs: WEEK_MS }
  async function lane(l) {
    for (let i = 0; performance.now() < deadline && i < 10_000_000; i++) {
      const t = performance.now()
      const result = await store.claim(`default:${crypto.randomUUID()}`, options)
      latencies.push(performance.now() - t)
      if (result.status !== 'acquired') throw new Error(`lane ${l}: a fresh key was ${result.status}`)
      await store.complete(result.claim, options)
      events++
    }
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: PURGE_CONCURRENCY }, (_, l) => lane(l)))
  const elapsed = (performance.now() - start) / 1000
  latencies.sort((a, b) => a - b)
  return {
    perSecond: events / elapsed,
    elapsed,
    p99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    maxMs: latencies.at(-1) ?? 0,
  }
}

async function purge(kind) {
  const backlog = await filledStore(kind, 'purge_backlog')
  const fresh = await filledStore(kind, 'purge_empty')
  try {
    const empty = await startServer(pinning, FRAMEWORK, MODES[kind], { services, env: fresh.env })
    const full = await startServer(pinning, FRAMEWORK, MODES[kind], { services, env: backlog.env })
    let out
    try {
      out = await rounds(
        [
          { name: 'no backlog', server: empty },
          { name: 'backlog', server: full },
        ],
        PURGE_ROUNDS,
        SECONDS,
        async (name) => (name === 'backlog' ? backlog.expiredLeft() : 0),
        // The backlog comes after the warm-up, whose writes would already purge part of it.
        async () => {
          log(`${NAMES[kind]}: a backlog of ${fmt(PURGE)} expired records …`)
          await backlog.fill(PURGE, true)
        },
      )
    } finally {
      await Promise.all([empty.stop(), full.stop()])
    }
    const purgedRounds = out.backlog.map((row) => ({
      perSecond: row.perSecond,
      deleted: row.between.before - row.between.after,
      deletedPerSecond: (row.between.before - row.between.after) / (row.elapsedMs / 1000),
      left: row.between.after,
      p99Us: row.p99Us,
      maxUs: row.maxUs,
    }))
    // Rounds that began with a backlog: the p99 while the purge had work.
    const busy = out.backlog.map((row, i) => [out['no backlog'][i], row]).filter(([, row]) => row.between.before > 0)
    const row = {
      kind,
      backlog: PURGE,
      ...compare(out['no backlog'], out.backlog),
      busyP99Ratio: busy.length ? median(busy.map(([b, s]) => s.p99Us / Math.max(b.p99Us, 1))) : undefined,
      busyRounds: busy.length,
      purgedRounds,
      rounds: out,
    }
    results.purge.push(row)
    // Store level: lanes as fast as the store goes, on a second backlog of the same size, against a fresh store.
    log(`${NAMES[kind]}: store level, ${PURGE_CONCURRENCY} lanes …`)
    await backlog.fill(PURGE, true)
    const before = await backlog.expiredLeft()
    const onBacklog = backlog.store()
    const onFresh = fresh.store()
    try {
      const freshRun = await storeLoad(onFresh, PURGE_STORE_SECONDS)
      const backlogRun = await storeLoad(onBacklog, PURGE_STORE_SECONDS)
      const after = await backlog.expiredLeft()
      const deleted = before - after
      results.purgeStore.push({
        kind,
        backlog: before,
        fresh: freshRun,
        withBacklog: backlogRun,
        deleted,
        deletedPerSecond: deleted / backlogRun.elapsed,
      })
      log(
        `  fresh ${fmt(freshRun.perSecond)} events/s (claim p99 ${freshRun.p99Ms.toFixed(2)} ms, max ${freshRun.maxMs.toFixed(1)} ms); backlog ${fmt(backlogRun.perSecond)} events/s (claim p99 ${backlogRun.p99Ms.toFixed(2)} ms, max ${backlogRun.maxMs.toFixed(1)} ms), ${fmt(deleted)} expired deleted (${fmt(deleted / backlogRun.elapsed)}/s)`,
      )
    } finally {
      await Promise.all([onBacklog.close(), onFresh.close()])
    }
  } finally {
    await Promise.all([backlog.close(), fresh.close()])
  }
}

// ---------------------------------------------------------------- run

try {
  if (PARTS.includes('retained')) for (const kind of KINDS) await retained(kind)
  if (PURGE > 0 && PARTS.includes('purge')) for (const kind of KINDS.filter((k) => k !== 'redis')) await purge(kind)
} finally {
  await load.stop()
  await services.stopAll()
  rmSync(dir, { recursive: true, force: true })
}
results.endLoad = loadavg()[0]

// ---------------------------------------------------------------- report

const version = (name) => JSON.parse(readFileSync(join(benchDir, 'node_modules', name, 'package.json'), 'utf8')).version
const ms = (us) => `${(us / 1000).toFixed(2)} ms`
const pair = ([a, b], f) => `${f(a)} → ${f(b)}`
const us = (x) => `${x.toFixed(1)} µs`
const perEvent = (bytes, n) => (n > 0 ? `${fmt(bytes / n, 1)} B` : '—')

function bytesRow(b) {
  if (b.kind === 'sqlite') {
    const table = b.ours.objects.find((o) => o.name === 'email_webhook_dedup')
    const handTable = b.hand?.objects.find((o) => o.name === 'hand_seen')
    return `| SQLite | ${fmt(b.size)} | ${b.fillSeconds.toFixed(0)} s | ${mb(b.ours.file)} (${perEvent(b.ours.file, b.ours.rows)}) | table ${mb(table.bytes)}: ${fmt(table.pages)} pages of ${fmt(b.ours.pageSize)} B, ${((table.payload / table.bytes) * 100).toFixed(0)} % payload, ${((table.unused / table.bytes) * 100).toFixed(0)} % unused, depth ${table.depth} | ${b.handSize === b.size && handTable ? `${mb(b.hand.file)} (${perEvent(b.hand.file, b.hand.rows)}); ${fmt(handTable.pages)} pages of ${fmt(b.hand.pageSize)} B, ${((handTable.unused / handTable.bytes) * 100).toFixed(0)} % unused` : '—'} | ${b.handSize === b.size ? `${(b.ours.file / b.ours.rows / (b.hand.file / b.hand.rows)).toFixed(2)}×` : '—'} |`
  }
  if (b.kind === 'postgres') {
    const each = (b.ours.each ?? []).map((i) => `${i.name.replace(/^retained_?/, '') || i.name} ${mb(i.bytes)}`).join(', ')
    return `| PostgreSQL | ${fmt(b.size)} | ${b.fillSeconds.toFixed(0)} s | ${mb(b.ours.total)} (${perEvent(b.ours.total, b.ours.rows)}) | heap ${mb(b.ours.heap)} (${perEvent(b.ours.heap, b.ours.rows)}), indexes ${mb(b.ours.indexes)}: ${each} | ${b.handSize === b.size ? `${mb(b.hand.total)} (${perEvent(b.hand.total, b.hand.rows)}): heap ${mb(b.hand.heap)}, primary key ${mb(b.hand.indexes)}` : '—'} | ${b.handSize === b.size ? `${(b.ours.total / b.ours.rows / (b.hand.total / b.hand.rows)).toFixed(2)}×` : '—'} |`
  }
  return `| Redis | ${fmt(b.size)} | ${b.fillSeconds.toFixed(0)} s | used_memory +${mb(b.ours.total)} (${perEvent(b.ours.total, b.size)} a key) | AOF on disk ${b.ours.aofTotal === undefined ? '?' : mb(b.ours.aofTotal)} (all keys of the server) | ${b.hand ? `+${mb(b.hand.total)} (${perEvent(b.hand.total, b.handSize)} a key)` : '—'} | ${b.hand ? `${(b.ours.perRecord / b.hand.perRecord).toFixed(2)}×` : '—'} |`
}

const redisBytes = results.bytes.filter((b) => b.kind === 'redis').at(-1)
const weekKeys = RATE_FOR_MEMORY * 7 * 24 * 3600
const lines = [
  HEADING,
  '',
  `Run of ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC by \`node bench/src/retained.js\` (writes this section; a full \`npx -y pnpm@12 bench\` run rewrites the file without it). @email-webhooks/core ${version('@email-webhooks/core')}, hono ${version('hono')}, @hono/node-server ${version('@hono/node-server')}, better-sqlite3 ${version('better-sqlite3')}, pg ${version('pg')}, ioredis ${version('ioredis')}; PostgreSQL 15, Redis 7 (started by the bench, as in the HTTP section). Node ${process.version}; ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB; load average ${startLoad.toFixed(2)} at start, ${results.endLoad.toFixed(2)} at end; ${pinning.note}.`,
  '',
  `**Method.** Each store is filled with done records through its own layout, not through HTTP (bench/src/fill.js: SQLite and PostgreSQL by \`INSERT … SELECT\` from a recursive CTE or \`generate_series\`, 500,000 rows a transaction, keys \`default:<random UUIDv4>\` in random order as arrivals are, expiries spread evenly over the coming 7 days as in a store that has received at a steady rate for a week; PostgreSQL then \`VACUUM ANALYZE\`, as autovacuum would; Redis by pipelined \`SET key "1:<expires at>:1:" PX <left>\`, the store's own value, with \`appendfsync no\` during the fill only; bench/test/fill.test.ts reads filled records back as \`done\` through each store's \`lookup()\`). Then Hono with our adapter on the filled store and on an empty one (a fresh file, table or key prefix) in ${ROUNDS} interleaved rounds of ${SECONDS} s after a ${WARMUP_SECONDS} s warm-up, exactly as the HTTP section measures (server pinned, load generator on the other core, 10 connections, pre-signed distinct ~1 KB events); medians of the rounds, ratios the median of the rounds' own ratios; CPU per event is the server's plus, for PostgreSQL and Redis, the database server's. The file, table and keys stay in the OS page cache here (${Math.round(totalmem() / 2 ** 30)} GiB): a server whose store is larger than its memory reads from disk and is not measured.`,
  '',
  '### Retained done records: filled against empty',
  '',
  '| Store | retained | req/s empty → filled | ratio | server CPU/event empty → filled | DB CPU/event empty → filled | CPU ratio (with DB) | p99 empty → filled | others on server core (max) | flagged rounds |',
  '| --- | ---: | --- | ---: | --- | --- | ---: | --- | ---: | ---: |',
  ...results.retained.map(
    (r) =>
      `| ${NAMES[r.kind]} | ${fmt(r.size)} | ${pair(r.perSecond, fmt)} | ${r.ratio.toFixed(2)}× | ${pair(r.cpuUs, us)} | ${r.dbCpuUs ? pair(r.dbCpuUs, us) : '—'} | ${r.cpuRatio.toFixed(2)}× | ${pair(r.p99Us, ms)} | ${Math.round(r.othersMax * 100)} % | ${r.flagged} |`,
  ),
  '',
  ...results.retained
    .filter((r) => r.hand)
    .map(
      (r) =>
        `${NAMES[r.kind]} at ${fmt(r.size)}, the hand-written receiver (bench/src/hand: ${r.kind === 'sqlite' ? "`hand_seen (id TEXT PRIMARY KEY, seen_at) WITHOUT ROWID`, one SELECT and one INSERT OR IGNORE an event, group commit, 4 KiB pages, SQLite's default page cache" : '`(id text PRIMARY KEY, seen_at timestamptz)`, one SELECT and one INSERT … ON CONFLICT DO NOTHING an event, a pool of 10'}) on its own table filled with as many records, against an empty one, in the same interleaved rounds: ${pair(r.hand.perSecond, fmt)} req/s (${r.hand.ratio.toFixed(2)}×), CPU per event ${pair(r.hand.cpuUs, us)}${r.hand.dbCpuUs ? ` + DB ${pair(r.hand.dbCpuUs, us)}` : ''} (${r.hand.cpuRatio.toFixed(2)}× with the DB's), p99 ${pair(r.hand.p99Us, ms)}.\n`,
    ),
  ...results.retained
    .filter((r) => r.noIndex || r.purgeScan)
    .flatMap((r) => [
      ...(r.noIndex
        ? [
            `PostgreSQL at ${fmt(r.size)}, the same table without its \`expires_at\` index (dropped after the fill; the store's purge then finds expired rows by scanning the table), in the same interleaved rounds: ${pair(r.noIndex.perSecond, fmt)} req/s against empty (${r.noIndex.ratio.toFixed(2)}×), server ${pair(r.noIndex.cpuUs, us)} + DB ${pair(r.noIndex.dbCpuUs, us)} per event (${r.noIndex.cpuRatio.toFixed(2)}× with the DB), p99 ${pair(r.noIndex.p99Us, ms)}.`,
          ]
        : []),
      `PostgreSQL at ${fmt(r.size)}: the purge's batch query with nothing expired (EXPLAIN ANALYZE, once): ${Object.entries(r.purgeScan)
        .map(([t, x]) => `${t === 'retained' ? 'with the index' : 'without it'} ${x.ms.toFixed(2)} ms (${x.plan})`)
        .join('; ')}.`,
      '',
    ]),
  '### Bytes per retained event',
  '',
  'After the fill (SQLite after a WAL checkpoint): the store against the hand-written receiver’s minimal table (bench/src/hand: SQLite `hand_seen (id TEXT PRIMARY KEY, seen_at INTEGER) WITHOUT ROWID` at SQLite’s default 4 KiB pages; PostgreSQL `hand_seen (id text PRIMARY KEY, seen_at timestamptz)`; Redis `hand:<id>` = `1`) filled with as many records the same way. Our keys carry the namespace (`default:`, 8 bytes) the hand-written ones do not.',
  '',
  '| Store | retained (filled) | fill time | ours on disk (per row: filled and written by the rounds) | where it goes | hand-written (per event) | ours / hand-written |',
  '| --- | ---: | ---: | --- | --- | --- | ---: |',
  ...results.bytes.map(bytesRow),
  '',
  ...(redisBytes
    ? [
        `Redis \`maxmemory\` for a week of done records at ${RATE_FOR_MEMORY} events/s (${fmt(weekKeys)} keys, the default 7-day retention) at the measured ${fmt(redisBytes.ours.perRecord, 0)} B a key: ${((weekKeys * redisBytes.ours.perRecord) / 2 ** 30).toFixed(2)} GiB of keys; with room for the allocator's fragmentation and the AOF rewrite's copy-on-write, set \`maxmemory\` to about ${((weekKeys * redisBytes.ours.perRecord * 1.5) / 2 ** 30).toFixed(1)} GiB (1.5×) and keep \`maxmemory-policy noeviction\` (an evicted done record is a duplicate run). At 100 events/s: ${((5 * weekKeys * redisBytes.ours.perRecord * 1.5) / 2 ** 30).toFixed(1)} GiB.`,
        '',
      ]
    : []),
  ...(results.purge.length
    ? [
        '### Purge under load',
        '',
        `A store holding ${fmt(PURGE)} expired done records (expired within the last day: the purge's backlog, filled as above) against an empty one, in ${PURGE_ROUNDS} interleaved HTTP rounds of ${SECONDS} s; the expired rows left were counted between rounds (untimed). The store's own purge runs as it does in production (SQLite: a step after every 256 rows written, walking 4 rows per done record written and at least 1,024, in its own transaction; PostgreSQL: in the background at most once a second or per 1,000 claims, batches of 1,000 rows through the \`expires_at\` index until a batch comes back short, at most 100 batches a run, since issue 48 pausing after each full batch as long as it took).`,
        '',
        '| Store | req/s no backlog → backlog | ratio | p99 no backlog → backlog | p99 ratio (rounds with a backlog left) | slowest answer no backlog → backlog | expired rows deleted per second (per round) | arrivals per second (per round) |',
        '| --- | --- | ---: | --- | ---: | --- | --- | --- |',
        ...results.purge.map(
          (r) =>
            `| ${NAMES[r.kind]} | ${pair(r.perSecond, fmt)} | ${r.ratio.toFixed(2)}× | ${pair(r.p99Us, ms)} | ${r.busyP99Ratio === undefined ? '—' : `${r.busyP99Ratio.toFixed(2)}× (${r.busyRounds} rounds)`} | ${pair(r.maxUs, ms)} | ${r.purgedRounds.map((p) => fmt(p.deletedPerSecond)).join(', ')} | ${r.purgedRounds.map((p) => fmt(p.perSecond)).join(', ')} |`,
        ),
        '',
        `Store level (no HTTP): ${PURGE_CONCURRENCY} claim + complete lanes for ${PURGE_STORE_SECONDS} s as fast as the store goes, on a fresh store and then on one holding a new backlog of ${fmt(PURGE)} expired records; every claim timed (its slowest is the longest a purge step held a claim up).`,
        '',
        '| Store | events/s fresh → backlog | claim p99 fresh → backlog | slowest claim fresh → backlog | expired rows deleted meanwhile | deleted per second | deleted per event written |',
        '| --- | --- | --- | --- | ---: | ---: | ---: |',
        ...results.purgeStore.map(
          (r) =>
            `| ${NAMES[r.kind]} | ${fmt(r.fresh.perSecond)} → ${fmt(r.withBacklog.perSecond)} | ${r.fresh.p99Ms.toFixed(2)} → ${r.withBacklog.p99Ms.toFixed(2)} ms | ${r.fresh.maxMs.toFixed(1)} → ${r.withBacklog.maxMs.toFixed(1)} ms | ${fmt(r.deleted)} of ${fmt(r.backlog)} | ${fmt(r.deletedPerSecond)} | ${(r.deletedPerSecond / r.withBacklog.perSecond).toFixed(2)} |`,
        ),
        '',
      ]
    : []),
]

// Regressions against an earlier run of this script (same machine): any row more than 10 % worse.
const comparable = {
  started: results.started,
  rows: [
    // handCpuUs: the hand-written receiver's CPU per event on its empty table (code of ours not in
    // it), how much the machine moved between two runs (machineShift).
    ...results.retained.map((r) => ({
      id: `retained ${r.kind} ${r.size}`,
      ratio: r.ratio,
      cpuRatio: r.cpuRatio,
      handCpuUs: r.hand?.cpuUs[0],
    })),
    ...results.purge.map((r) => ({ id: `purge ${r.kind} ${r.backlog}`, ratio: r.ratio, p99Ratio: r.p99Ratio })),
  ],
}
results.comparable = comparable
// A run that writes RESULTS.md keeps its rows in bench/last-retained.json for the next run to compare with.
const LAST_RUN = join(benchDir, 'last-retained.json')
const previousFile = args.previous ?? (existsSync(LAST_RUN) && !SMOKE ? LAST_RUN : undefined)
if (previousFile) {
  try {
    const previous = JSON.parse(readFileSync(previousFile, 'utf8')).comparable
    const found = compareRuns(previous, comparable, { higherIsBetter: ['ratio'], lowerIsBetter: ['cpuRatio', 'p99Ratio'] })
    const shift = machineShift(previous, comparable, 'handCpuUs', "the hand-written receivers' CPU per event on an empty table")
    const against = `${previousFile.replace(benchDir, 'bench')} (${previous.started?.slice(0, 16).replace('T', ' ')} UTC)`
    for (const line of formatRegressions(found, against, false, shift)) log(line)
    lines.push(...formatRegressions(found, against, true, shift), '')
  } catch (error) {
    log(`could not compare with ${previousFile}: ${error.message}`)
  }
}

emitSection(lines, OUT, HEADING)
if (args.json) writeFileSync(args.json, `${JSON.stringify(results, null, 2)}\n`)
// Only a whole run (the one that writes RESULTS.md by default) is the next run's reference.
if (OUT && !args.out) writeFileSync(LAST_RUN, `${JSON.stringify({ comparable }, null, 1)}\n`)
