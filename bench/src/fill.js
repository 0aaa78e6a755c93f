/**
 * Fills a store with done records quickly, through the store's own layout rather than through
 * HTTP (issue 48): each record is what the store writes when it completes an event — the key
 * `<namespace>:<webhook-id>` with a random UUIDv4 id (as real webhook ids are), and an expiry
 * `retentionMs` after its (spread) completion — so that the store cannot tell it from one it wrote
 * (bench/test/fill.test.ts reads them back with the store's `lookup()`).
 *
 *   SQLite      generations (packages/core/src/store/sqlite/generations.ts): each generation's
 *               records inserted into `<table>_now` (key, expires_at) by `INSERT … SELECT` from a
 *               recursive CTE, in random key order (as arrivals are, so the B-tree's pages fill as
 *               the store's own writes fill them), its last few thousand claimed and completed
 *               through a SqliteDedupStore on the file, whose check after them seals the
 *               generation as a receiver's store seals it (renamed, hashes stored). No lease row
 *               (a complete deletes it). `fillSqliteTable` fills one table of that shape by SQL
 *               alone (the one-table layout before generations, for the profiles).
 *   PostgreSQL  `<table>` (key, done true, token NULL, attempt 1, expires_at): `INSERT … SELECT`
 *               from `generate_series`, random key order, a few transactions; then VACUUM ANALYZE
 *               (what autovacuum does to a table that grew).
 *   Redis       `<prefix><key>` = `1:<expires at ms>:1:` with `PX` the time left (COMPLETE_DONE in
 *               the store's scripts), pipelined.
 *
 * Expiries: by default the records arrived evenly over the last `retentionMs`, so they expire
 * evenly over the next `retentionMs` (a store in its steady state); with `expired: true` they
 * expired within the last day (a purge backlog; not for Redis, which expires keys by itself).
 * The hand-written receivers' tables (bench/src/hand/dedup.js) are filled the same way, for the
 * bytes-per-event comparison.
 */
import { randomUUID } from 'node:crypto'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'

export const WEEK_MS = 7 * 24 * 3600_000
const DAY_MS = 24 * 3600_000
/** Rows per transaction (SQLite, PostgreSQL) and per pipeline (Redis). */
const SQL_CHUNK = 500_000
const REDIS_CHUNK = 10_000
/** Rounds of top-up after random-key collisions (never expected; bounded). */
const MAX_TOPUPS = 5

/** SQLite's expression for a random lower-case UUIDv4 (each part from its own random bytes: still a uniformly random v4). */
const SQLITE_UUID = `substr(lower(hex(randomblob(4))), 1, 8) || '-' || lower(hex(randomblob(2))) || '-4' ||
  substr(lower(hex(randomblob(2))), 2, 3) || '-' || substr('89ab', 1 + abs(random() % 4), 1) ||
  substr(lower(hex(randomblob(2))), 2, 3) || '-' || lower(hex(randomblob(6)))`

/** The expiry range of a fill: [low, low + span) ms. */
function expiryRange({ now, retentionMs, expired }) {
  return expired ? { low: now - DAY_MS, span: DAY_MS - 1 } : { low: now + 1, span: retentionMs }
}

/**
 * Adds `count` done records to the SQLite store's table `table` in the file `db` (a better-sqlite3
 * Database whose tables the store created). Returns the rows added.
 */
export function fillSqliteTable(db, { table, count, namespace = 'default', now = Date.now(), retentionMs = WEEK_MS, expired = false }) {
  const { low, span } = expiryRange({ now, retentionMs, expired })
  const insert = db.prepare(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
    INSERT INTO ${table} (key, expires_at)
    SELECT ? || ':' || ${SQLITE_UUID}, ? + abs(random() % ?) FROM n WHERE true
    ON CONFLICT (key) DO NOTHING`)
  return fillSql(count, (rows) => db.transaction(() => insert.run(rows, namespace, low, span).changes)())
}

/**
 * Adds `count` done records to the SQLite store's file at `path` (`db`: a better-sqlite3 Database
 * on it, whose tables the store created) in the store's generations of `generationRecords`.
 * Returns the records added. With `expired`, the records completed through the store expired
 * one to two days ago (the store's clock set back two days), the others within the last day.
 */
export async function fillSqliteStore(
  db,
  { path, count, table = 'email_webhook_dedup', generationRecords = 50_000, now = Date.now(), retentionMs = WEEK_MS, expired = false },
) {
  const store = new SqliteDedupStore({
    path,
    table,
    durability: 'normal',
    generationRecords,
    now: expired ? () => Date.now() - 2 * DAY_MS : Date.now,
  })
  const generations = db.prepare(`SELECT count(*) FROM ${table}_gen`).pluck()
  const life = expired ? DAY_MS : retentionMs
  let added = 0
  try {
    // Live records already in the current table (a server's warm-up) would be sealed together with the
    // expired ones below, and a generation is dropped only once all its records expired: the backlog's
    // first generation would then stay for the live records' retention. They get a generation of
    // their own first, topped up with live records through the store until its check seals it.
    if (expired && db.prepare(`SELECT count(*) FROM ${table}_now`).pluck().get() > 0) {
      await throughStoreUntilSealed(store, generations, { atLeast: 0, claimRetentionMs: retentionMs, retentionMs: () => retentionMs })
    }
    while (added < count) {
      const want = Math.min(generationRecords, count - added)
      // The store counts its current table every tenth of a generation it writes: that many go through it.
      const bySql = want === generationRecords ? want - Math.floor(generationRecords / 10) : want
      added += fillSqliteTable(db, { table: `${table}_now`, count: bySql, now, retentionMs, expired })
      if (bySql === want) break
      // The rest of the generation through the store, then more until its check sealed it.
      added += await throughStoreUntilSealed(store, generations, {
        atLeast: want - bySql,
        claimRetentionMs: life,
        retentionMs: () => 1 + Math.floor(Math.random() * life),
      })
    }
    // A sealed generation is hashed after its seal, 250 keys a write batch of the store: claims (each
    // one batch) until every generation is, as in a store that has run a while; their leases are
    // released and then deleted, so the file holds the done records and nothing else.
    const unhashed = db.prepare(`SELECT count(*) FROM ${table}_gen WHERE hashes IS NULL AND records IS NOT NULL`).pluck()
    for (let rounds = 0; unhashed.get() > 0; rounds++) {
      if (rounds > 5_000) throw new Error('fill: the store did not hash its generations')
      const claim = await store.claim(`default:fill-hashing-${rounds}`, { leaseMs: 60_000, retentionMs: life })
      if (claim.status !== 'acquired') throw new Error(`fill: a hashing claim was ${claim.status}`)
      await store.release(claim.claim)
    }
  } finally {
    await store.close()
  }
  db.prepare(`DELETE FROM ${table}_lease WHERE key GLOB 'default:fill-hashing-*'`).run()
  return added
}

/**
 * Completes new keys through `store`, 100 at a time, at least `atLeast` of them and then on until its
 * check sealed the current table (`generations`: the count of listed generations); the records written.
 */
async function throughStoreUntilSealed(store, generations, { atLeast, claimRetentionMs, retentionMs }) {
  const before = generations.get()
  let written = 0
  for (let rounds = 0; written < atLeast || generations.get() === before; rounds++) {
    if (rounds > 1_000) throw new Error(`fill: the store did not seal generation ${before + 1}`)
    const keys = Array.from({ length: Math.min(100, written < atLeast ? atLeast - written : 100) }, () => `default:${randomUUID()}`)
    await Promise.all(
      keys.map(async (key) => {
        const claim = await store.claim(key, { leaseMs: 60_000, retentionMs: claimRetentionMs })
        if (claim.status !== 'acquired') throw new Error(`fill: ${key} was ${claim.status}`)
        await store.complete(claim.claim, { retentionMs: retentionMs() })
      }),
    )
    written += keys.length
  }
  return written
}

/** The hand-written SQLite receiver's table (`hand_seen`: bare webhook id → when seen). */
export function fillSqliteHand(db, { count, now = Date.now() }) {
  db.exec('CREATE TABLE IF NOT EXISTS hand_seen (id TEXT PRIMARY KEY, seen_at INTEGER NOT NULL) WITHOUT ROWID')
  const insert = db.prepare(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
    INSERT OR IGNORE INTO hand_seen (id, seen_at) SELECT ${SQLITE_UUID}, ? - abs(random() % ?) FROM n`)
  return fillSql(count, (rows) => db.transaction(() => insert.run(rows, now, WEEK_MS).changes)())
}

/** Chunks of SQL_CHUNK rows until `count` were added (a chunk that lost rows to a collision is topped up). */
function fillSql(count, chunk) {
  let added = 0
  let topups = 0
  while (added < count) {
    const want = Math.min(SQL_CHUNK, count - added)
    const got = chunk(want)
    added += got
    if (got < want && ++topups > MAX_TOPUPS) throw new Error(`fill: ${added} of ${count} rows after ${MAX_TOPUPS} top-ups`)
  }
  return added
}

/** Adds `count` done records to the PostgreSQL store's table (`client`: a pg Client or Pool). Returns the rows added. */
export async function fillPostgresTable(
  client,
  { table, count, namespace = 'default', retentionMs = WEEK_MS, expired = false, analyze = true },
) {
  // On the server's clock, as the store's own expiries.
  const expiry = expired ? `now() - random() * interval '1 day'` : `now() + random() * ${retentionMs}::float8 * interval '1 millisecond'`
  const sql = `INSERT INTO ${table} (key, done, token, attempt, expires_at)
    SELECT $1 || ':' || gen_random_uuid()::text, true, NULL, 1, ${expiry} FROM generate_series(1, $2::int)
    ON CONFLICT (key) DO NOTHING`
  const added = await fillPg(count, async (rows) => (await client.query(sql, [namespace, rows])).rowCount)
  if (analyze) await client.query(`VACUUM ANALYZE ${table}`)
  return added
}

/** The hand-written PostgreSQL receiver's table (`hand_seen`: bare webhook id → when seen). */
export async function fillPostgresHand(client, { count, table = 'hand_seen' }) {
  await client.query(`CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, seen_at timestamptz NOT NULL DEFAULT now())`)
  const sql = `INSERT INTO ${table} (id, seen_at) SELECT gen_random_uuid()::text, now() - random() * interval '7 days'
    FROM generate_series(1, $1::int) ON CONFLICT DO NOTHING`
  const added = await fillPg(count, async (rows) => (await client.query(sql, [rows])).rowCount)
  await client.query(`VACUUM ANALYZE ${table}`)
  return added
}

async function fillPg(count, chunk) {
  let added = 0
  let topups = 0
  while (added < count) {
    const want = Math.min(SQL_CHUNK, count - added)
    const got = await chunk(want)
    added += got
    if (got < want && ++topups > MAX_TOPUPS) throw new Error(`fill: ${added} of ${count} rows after ${MAX_TOPUPS} top-ups`)
  }
  return added
}

/**
 * Adds `count` done records under the Redis store's `prefix` (`client`: an ioredis client).
 * The expiry is read from the server's clock (TIME) once, as the store's scripts read it.
 * Returns the keys written (SET without NX: a collision would overwrite, never expected).
 */
export async function fillRedisKeys(client, { prefix, count, namespace = 'default', retentionMs = WEEK_MS }) {
  const [seconds, micros] = await client.time()
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
  let written = 0
  while (written < count) {
    const pipeline = client.pipeline()
    const n = Math.min(REDIS_CHUNK, count - written)
    for (let i = 0; i < n; i++) {
      const left = 1 + Math.floor(Math.random() * retentionMs)
      pipeline.set(`${prefix}${namespace}:${randomUUID()}`, `1:${now + left}:1:`, 'PX', left)
    }
    const results = await pipeline.exec()
    const failed = results.find(([error]) => error)
    if (failed) throw failed[0]
    written += n
  }
  return written
}

/** The hand-written Redis receiver's keys (`hand:<id>` = '1', PX the retention left). */
export async function fillRedisHand(client, { count, retentionMs = WEEK_MS }) {
  let written = 0
  while (written < count) {
    const pipeline = client.pipeline()
    const n = Math.min(REDIS_CHUNK, count - written)
    for (let i = 0; i < n; i++) pipeline.set(`hand:${randomUUID()}`, '1', 'PX', 1 + Math.floor(Math.random() * retentionMs))
    const results = await pipeline.exec()
    const failed = results.find(([error]) => error)
    if (failed) throw failed[0]
    written += n
  }
  return written
}
