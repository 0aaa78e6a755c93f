/**
 * The hand-written receivers' dedup, one per kind of store, each the plain way to do it:
 * `seen(id)` answers whether the event was recorded, `record(id)` records it after the handler ran
 * and resolves only once the record is durable (in the durable stores).
 *
 *   memory    a Map (insertion order, the oldest dropped past `maxKeys`)
 *   sqlite    better-sqlite3, WAL, `synchronous=FULL`: `SELECT`, then `INSERT OR IGNORE`; the
 *             inserts of one event-loop turn share one transaction (group commit), and every
 *             `record` of the turn resolves after that commit (its fsync) returned
 *   postgres  a `pg` Pool of 10: `SELECT`, then one `INSERT … ON CONFLICT DO NOTHING` (autocommit,
 *             `synchronous_commit` on: durable when it answers)
 *   redis     ioredis: `GET`, then `SET key 1 NX PX retention` (durable when Redis runs with
 *             `appendfsync always`, as the bench starts it)
 */
const RETENTION_MS = 7 * 24 * 3600_000

/** A Map of event ids; past `maxKeys` the oldest goes. */
export function memoryDedup({ maxKeys = 1_000_000 } = {}) {
  const seen = new Map()
  return {
    seen: (id) => seen.has(id),
    record(id) {
      seen.set(id, Date.now())
      if (seen.size > maxKeys) seen.delete(seen.keys().next().value)
    },
    close() {},
  }
}

/** SQLite at `path` with group commit: one transaction (one fsync) per event-loop turn. */
export async function sqliteDedup({ path }) {
  const { default: Database } = await import('better-sqlite3')
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.exec('CREATE TABLE IF NOT EXISTS hand_seen (id TEXT PRIMARY KEY, seen_at INTEGER NOT NULL) WITHOUT ROWID')
  const select = db.prepare('SELECT 1 FROM hand_seen WHERE id = ?').pluck()
  const insert = db.prepare('INSERT OR IGNORE INTO hand_seen (id, seen_at) VALUES (?, ?)')
  let batch = []
  const commitAll = db.transaction((rows) => {
    const at = Date.now()
    for (const row of rows) insert.run(row.id, at)
  })
  function flush() {
    const rows = batch
    batch = []
    try {
      commitAll(rows)
    } catch (error) {
      for (const row of rows) row.reject(error)
      return
    }
    for (const row of rows) row.resolve()
  }
  return {
    seen: (id) => select.get(id) !== undefined,
    record(id) {
      return new Promise((resolve, reject) => {
        if (batch.length === 0) setImmediate(flush)
        batch.push({ id, resolve, reject })
      })
    },
    close: () => db.close(),
  }
}

/** PostgreSQL through a `pg` Pool of 10, table `hand_seen`. */
export async function postgresDedup({ url, table = 'hand_seen' }) {
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({ connectionString: url, max: 10 })
  pool.on('error', () => {})
  // Two servers (Express and Hono) may start at once: IF NOT EXISTS does not stop both from
  // creating the table's type, and the loser's 23505 means the table is there.
  await pool
    .query(`CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, seen_at timestamptz NOT NULL DEFAULT now())`)
    .catch((error) => {
      if (error?.code !== '23505' && error?.code !== '42P07') throw error
    })
  return {
    seen: async (id) => (await pool.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id])).rowCount > 0,
    record: async (id) => {
      await pool.query(`INSERT INTO ${table} (id) VALUES ($1) ON CONFLICT DO NOTHING`, [id])
    },
    close: () => pool.end(),
  }
}

/** Redis through ioredis, keys `hand:<id>`. */
export async function redisDedup({ url }) {
  const { default: Redis } = await import('ioredis')
  const client = new Redis(url, { maxRetriesPerRequest: 1 })
  await client.ping()
  return {
    seen: async (id) => (await client.get(`hand:${id}`)) !== null,
    record: async (id) => {
      await client.set(`hand:${id}`, '1', 'PX', RETENTION_MS, 'NX')
    },
    close: () => client.quit(),
  }
}

/** The dedup of a hand-written server mode (`hand-memory`, `hand-sqlite`, …), from the environment the bench sets. */
export function openHandDedup(store, env = process.env) {
  if (store === 'memory') return memoryDedup()
  if (store === 'sqlite') return sqliteDedup({ path: env.EMAIL_WEBHOOKS_DB })
  // BENCH_HAND_TABLE: another table than hand_seen (the retained bench's filled and empty ones).
  if (store === 'postgres') return postgresDedup({ url: env.BENCH_POSTGRES_URL, table: env.BENCH_HAND_TABLE })
  if (store === 'redis') return redisDedup({ url: env.BENCH_REDIS_URL })
  throw new Error(`no hand-written dedup for ${store}`)
}
