/**
 * Prototypes of the statements proposed for phase 2 of the ordering issue: minimal dedup stores
 * with the ordering capability on real SQLite, PostgreSQL and Redis, so the SQL and Lua that the
 * real stores will gain are proven by the ordering conformance suite now. NOT the shipped stores:
 * their dedup part is reduced to what the ordering cases exercise.
 */

import type {
  Claim,
  OrderingClaimOptions,
  OrderingClaimResult,
  OrderingCompleteOptions,
  OrderingDedupStore,
  OrderMark,
} from '@email-webhooks/core'
import type { Redis } from 'ioredis'
import type pg from 'pg'

/** The part of better-sqlite3 the prototype uses (the tests do not ship its types). */
interface SqliteStatement {
  run(...params: unknown[]): { changes: number }
  all(...params: unknown[]): unknown[]
}
export interface SqliteDatabase {
  pragma(source: string): unknown
  exec(source: string): unknown
  prepare(source: string): SqliteStatement
  transaction<A extends unknown[], R>(fn: (...args: A) => R): { immediate(...args: A): R }
  close(): void
}

const markOf = (ms: unknown, id: unknown, type: unknown): OrderMark | null =>
  ms === null || ms === undefined || ms === false ? null : { createdAtMs: Number(ms), eventId: String(id), type: String(type) }

/** SQLite: the mark upsert runs in the same transaction as the token-fenced complete; BINARY collation is byte order. */
export class ProtoSqliteStore implements OrderingDedupStore {
  readonly ordering = true as const
  constructor(
    private readonly db: SqliteDatabase,
    private readonly t = 'proto',
  ) {
    db.pragma('journal_mode = WAL')
    db.pragma('busy_timeout = 5000')
    db.exec(`CREATE TABLE IF NOT EXISTS ${t} (key TEXT PRIMARY KEY, token TEXT, done INTEGER NOT NULL, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS ${t}_order (key TEXT PRIMARY KEY, created_at_ms INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;`)
  }

  claim(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult> {
    const { db, t } = this
    const run = db.transaction((now: number): OrderingClaimResult => {
      const token = crypto.randomUUID()
      const changed = db
        .prepare(`INSERT INTO ${t} (key, token, done, attempt, expires_at) VALUES (?, ?, 0, 1, ?)
          ON CONFLICT(key) DO UPDATE SET token = excluded.token, done = 0, attempt = CASE WHEN ${t}.done = 1 THEN 1 ELSE ${t}.attempt + 1 END, expires_at = excluded.expires_at
          WHERE ${t}.expires_at <= ?`)
        .run(key, token, now + opts.leaseMs, now).changes
      if (changed === 0) {
        const row = db.prepare(`SELECT done, expires_at FROM ${t} WHERE key = ?`).all(key)[0] as { done: number; expires_at: number }
        return row.done ? { status: 'duplicate' } : { status: 'in_flight', retryAfterMs: Math.max(1, row.expires_at - now) }
      }
      const { attempt } = db.prepare(`SELECT attempt FROM ${t} WHERE key = ?`).all(key)[0] as { attempt: number }
      const claim = { key, token, attempt }
      if (!opts.order) return { status: 'acquired', claim }
      const mark = db
        .prepare(`SELECT created_at_ms, event_id, type FROM ${t}_order WHERE key = ? AND expires_at > ?`)
        .all(opts.order.key, now)[0] as { created_at_ms: number; event_id: string; type: string } | undefined
      return { status: 'acquired', claim, order: { mark: mark ? markOf(mark.created_at_ms, mark.event_id, mark.type) : null } }
    })
    return Promise.resolve(run.immediate(Date.now()))
  }

  complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean> {
    const { db, t } = this
    const run = db.transaction((now: number): boolean => {
      const expires = now + opts.retentionMs
      const done = db
        .prepare(`UPDATE ${t} SET done = 1, token = NULL, expires_at = ? WHERE key = ? AND token = ? AND done = 0`)
        .run(expires, claim.key, claim.token).changes
      if (done !== 1 || !opts.order) return done === 1
      const { key, mark } = opts.order
      const newer = `${t}_order.expires_at <= @now OR excluded.created_at_ms > ${t}_order.created_at_ms
        OR (excluded.created_at_ms = ${t}_order.created_at_ms AND excluded.event_id > ${t}_order.event_id)`
      db.prepare(`INSERT INTO ${t}_order (key, created_at_ms, event_id, type, expires_at) VALUES (@key, @ms, @id, @type, @expires)
          ON CONFLICT(key) DO UPDATE SET
            created_at_ms = CASE WHEN ${newer} THEN excluded.created_at_ms ELSE ${t}_order.created_at_ms END,
            event_id = CASE WHEN ${newer} THEN excluded.event_id ELSE ${t}_order.event_id END,
            type = CASE WHEN ${newer} THEN excluded.type ELSE ${t}_order.type END,
            expires_at = excluded.expires_at`).run({ key, ms: mark.createdAtMs, id: mark.eventId, type: mark.type, expires, now })
      return true
    })
    return Promise.resolve(run.immediate(Date.now()))
  }

  release(claim: Claim): Promise<boolean> {
    const { changes } = this.db
      .prepare(`UPDATE ${this.t} SET token = NULL, expires_at = 0 WHERE key = ? AND token = ? AND done = 0`)
      .run(claim.key, claim.token)
    return Promise.resolve(changes === 1)
  }
}

/** PostgreSQL: claim and mark read in one statement; complete and the mark upsert in one statement (data-modifying CTEs). */
export class ProtoPostgresStore implements OrderingDedupStore {
  readonly ordering = true as const
  private ready: Promise<unknown> | undefined
  constructor(
    private readonly pool: pg.Pool,
    private readonly t: string,
  ) {}

  private init(): Promise<unknown> {
    this.ready ??=
      this.pool.query(`CREATE TABLE IF NOT EXISTS ${this.t} (key text PRIMARY KEY, token text, done boolean NOT NULL, attempt int NOT NULL, expires_at timestamptz NOT NULL);
      CREATE TABLE IF NOT EXISTS ${this.t}_order (key text COLLATE "C" PRIMARY KEY, created_at_ms bigint NOT NULL, event_id text COLLATE "C" NOT NULL, type text NOT NULL, expires_at timestamptz NOT NULL)`)
    return this.ready
  }

  async claim(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult> {
    await this.init()
    const t = this.t
    const token = crypto.randomUUID()
    const { rows } = await this.pool.query(
      `WITH c AS (
         INSERT INTO ${t} AS d (key, token, done, attempt, expires_at) VALUES ($1, $2, false, 1, clock_timestamp() + $3::double precision * interval '1 millisecond')
         ON CONFLICT (key) DO UPDATE SET token = excluded.token, done = false, attempt = CASE WHEN d.done THEN 1 ELSE d.attempt + 1 END, expires_at = excluded.expires_at
         WHERE d.expires_at <= clock_timestamp()
         RETURNING attempt)
       SELECT c.attempt, m.created_at_ms, m.event_id, m.type FROM c LEFT JOIN ${t}_order m ON m.key = $4 AND m.expires_at > clock_timestamp()`,
      [key, token, opts.leaseMs, opts.order?.key ?? null],
    )
    const row = rows[0]
    if (!row) {
      const state = await this.pool.query(
        `SELECT done, ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::int AS left FROM ${t} WHERE key = $1`,
        [key],
      )
      const { done, left } = state.rows[0]
      return done ? { status: 'duplicate' } : { status: 'in_flight', retryAfterMs: Math.max(1, left) }
    }
    const claim = { key, token, attempt: row.attempt }
    return opts.order
      ? { status: 'acquired', claim, order: { mark: markOf(row.created_at_ms, row.event_id, row.type) } }
      : { status: 'acquired', claim }
  }

  async complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean> {
    await this.init()
    const t = this.t
    const m = opts.order?.mark
    const newer = `m.expires_at <= clock_timestamp() OR (excluded.created_at_ms, excluded.event_id) > (m.created_at_ms, m.event_id)`
    const { rows } = await this.pool.query(
      `WITH done AS (
         UPDATE ${t} SET done = true, token = NULL, expires_at = clock_timestamp() + $3::double precision * interval '1 millisecond'
         WHERE key = $1 AND token = $2 AND NOT done RETURNING 1),
       mark AS (
         INSERT INTO ${t}_order AS m (key, created_at_ms, event_id, type, expires_at)
         SELECT $4, $5, $6, $7, clock_timestamp() + $3::double precision * interval '1 millisecond' FROM done WHERE $4::text IS NOT NULL
         ON CONFLICT (key) DO UPDATE SET
           created_at_ms = CASE WHEN ${newer} THEN excluded.created_at_ms ELSE m.created_at_ms END,
           event_id = CASE WHEN ${newer} THEN excluded.event_id ELSE m.event_id END,
           type = CASE WHEN ${newer} THEN excluded.type ELSE m.type END,
           expires_at = excluded.expires_at)
       SELECT count(*)::int AS n FROM done`,
      [claim.key, claim.token, opts.retentionMs, opts.order?.key ?? null, m?.createdAtMs ?? null, m?.eventId ?? null, m?.type ?? null],
    )
    return rows[0].n === 1
  }

  async release(claim: Claim): Promise<boolean> {
    await this.init()
    const { rowCount } = await this.pool.query(
      `UPDATE ${this.t} SET token = NULL, expires_at = '-infinity' WHERE key = $1 AND token = $2 AND NOT done`,
      [claim.key, claim.token],
    )
    return rowCount === 1
  }
}

// Byte-wise comparison: Lua's `<` on strings uses strcoll, which follows the server's locale.
const LUA_NEWER = `
local function newer(ms, id, cur_ms, cur_id)
  if cur_ms == false then return true end
  local a, b = tonumber(ms), tonumber(cur_ms)
  if a ~= b then return a > b end
  local n = math.min(#id, #cur_id)
  for i = 1, n do
    local x, y = string.byte(id, i), string.byte(cur_id, i)
    if x ~= y then return x > y end
  end
  return #id > #cur_id
end`

const CLAIM = `
local cur = redis.call('HMGET', KEYS[1], 'done', 'token')
if cur[1] == '1' then return {'duplicate'} end
if cur[2] and cur[2] ~= '' then return {'in_flight', redis.call('PTTL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'done', '0', 'token', ARGV[1])
local attempt = redis.call('HINCRBY', KEYS[1], 'attempt', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if #KEYS < 2 then return {'acquired', attempt} end
local m = redis.call('HMGET', KEYS[2], 'ms', 'id', 'type')
return {'acquired', attempt, m[1], m[2], m[3]}`

const COMPLETE = `${LUA_NEWER}
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'done') == '1' then return 0 end
redis.call('HSET', KEYS[1], 'done', '1', 'token', '')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if #KEYS < 2 then return 1 end
local cur = redis.call('HMGET', KEYS[2], 'ms', 'id')
if newer(ARGV[3], ARGV[4], cur[1], cur[2]) then redis.call('HSET', KEYS[2], 'ms', ARGV[3], 'id', ARGV[4], 'type', ARGV[5]) end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1`

const RELEASE = `
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'done') == '1' then return 0 end
redis.call('HSET', KEYS[1], 'token', '')
return 1`

/** Redis: one Lua script per operation over the dedup key and the mark key (both in one hash slot on a cluster). */
export class ProtoRedisStore implements OrderingDedupStore {
  readonly ordering = true as const
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private keys(key: string, markKey: string | undefined): string[] {
    return markKey === undefined ? [`${this.prefix}d:${key}`] : [`${this.prefix}d:${key}`, `${this.prefix}o:${markKey}`]
  }

  async claim(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult> {
    const token = crypto.randomUUID()
    const keys = this.keys(key, opts.order?.key)
    const reply = (await this.redis.eval(CLAIM, keys.length, ...keys, token, opts.leaseMs)) as Array<string | number | null>
    if (reply[0] === 'duplicate') return { status: 'duplicate' }
    if (reply[0] === 'in_flight') return { status: 'in_flight', retryAfterMs: Math.max(1, Number(reply[1])) }
    const claim = { key, token, attempt: Number(reply[1]) }
    return opts.order ? { status: 'acquired', claim, order: { mark: markOf(reply[2], reply[3], reply[4]) } } : { status: 'acquired', claim }
  }

  async complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean> {
    const keys = this.keys(claim.key, opts.order?.key)
    const m = opts.order?.mark
    const args = m ? [m.createdAtMs, m.eventId, m.type] : []
    return (await this.redis.eval(COMPLETE, keys.length, ...keys, claim.token, opts.retentionMs, ...args)) === 1
  }

  async release(claim: Claim): Promise<boolean> {
    const keys = this.keys(claim.key, undefined)
    return (await this.redis.eval(RELEASE, 1, ...keys, claim.token)) === 1
  }
}
