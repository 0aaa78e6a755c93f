// The retained-data bench's fill helpers (bench/src/fill.js, issue 48): a filled record must be
// one the store cannot tell from its own. Each store is filled with a few hundred records; the
// count is checked, every record reads back as `done` through the store's own `lookup()` and a
// claim of it answers `duplicate`; an expired fill reads `absent` and is purged by the store. No
// speed is asserted. PostgreSQL and Redis are started by the bench's own services.js.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Database from 'better-sqlite3'
import Redis from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fillPostgresHand, fillPostgresTable, fillRedisHand, fillRedisKeys, fillSqliteHand, fillSqliteStore, WEEK_MS } from '../src/fill.js'
import { lazyServices } from '../src/services.js'

const COUNT = 300
const OPTIONS = { leaseMs: 30_000, retentionMs: WEEK_MS }
const UUID_KEY = /^default:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const services = lazyServices()
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-fill-'))
let postgresUrl = ''
let redisUrl = ''

beforeAll(async () => {
  const [postgres, redis] = await Promise.all([services.get('postgres'), services.get('redis')])
  postgresUrl = postgres.url
  redisUrl = redis.url
})
afterAll(async () => {
  await services.stopAll()
  rmSync(dir, { recursive: true, force: true })
})

/** Every key reads back `done` through lookup(), and a claim of it is a duplicate. */
async function expectDone(store: SqliteDedupStore | PostgresDedupStore | RedisDedupStore, keys: string[]) {
  expect(keys).toHaveLength(COUNT)
  for (const key of keys) expect(key).toMatch(UUID_KEY)
  const states = await Promise.all(keys.map((key) => store.lookup(key)))
  expect(states.every((state) => state === 'done')).toBe(true)
  expect(await store.claim(keys[0] as string, OPTIONS)).toEqual({ status: 'duplicate' })
}

describe('SQLite', () => {
  it('fills done records the store reads as its own, and an expired backlog its purge removes', async () => {
    const path = join(dir, 'fill.db')
    await new SqliteDedupStore({ path }).close()
    const db = new Database(path)
    // Generations of 100: the fill seals three of each kind, as the store seals them.
    expect(await fillSqliteStore(db, { path, count: COUNT, generationRecords: 100 })).toBe(COUNT)
    expect(await fillSqliteStore(db, { path, count: COUNT, generationRecords: 100, expired: true })).toBe(COUNT)
    expect(db.prepare('SELECT count(*) FROM email_webhook_dedup_gen WHERE hashes IS NOT NULL').pluck().get()).toBe(6)
    const now = Date.now()
    const live = db.prepare('SELECT key FROM email_webhook_dedup_done WHERE expires_at > ?').pluck().all(now) as string[]
    const gone = db.prepare('SELECT key FROM email_webhook_dedup_done WHERE expires_at <= ?').pluck().all(now) as string[]
    // Live ones expire within the retention, evenly spread (not all at one instant).
    const expiries = db
      .prepare('SELECT min(expires_at) AS lo, max(expires_at) AS hi FROM email_webhook_dedup_done WHERE expires_at > ?')
      .get(now) as {
      lo: number
      hi: number
    }
    expect(expiries.hi).toBeLessThanOrEqual(now + WEEK_MS)
    expect(expiries.hi - expiries.lo).toBeGreaterThan(WEEK_MS / 2)
    expect(db.prepare('SELECT count(*) FROM email_webhook_dedup_lease').pluck().get()).toBe(0)
    db.close()
    const store = new SqliteDedupStore({ path, durability: 'full' })
    try {
      // Purge before any claim: a claim may start the store's background purge (a second after the
      // store was made), which would take the expired rows first.
      expect(gone).toHaveLength(COUNT)
      expect(await store.lookup(gone[0] as string)).toBe('absent')
      expect(store.purgeExpired()).toBe(COUNT)
      await expectDone(store, live)
    } finally {
      await store.close()
    }
  })

  it('an expired backlog filled after live records (a server’s warm-up) shares no generation with them, so the purge removes all of it', async () => {
    const path = join(dir, 'fill-after-live.db')
    const server = new SqliteDedupStore({ path, generationRecords: 100 })
    const db = new Database(path)
    try {
      for (let i = 0; i < 30; i++) {
        const claim = await server.claim(`default:warm-up-${i}`, OPTIONS)
        if (claim.status !== 'acquired') throw new Error(`claim: ${claim.status}`)
        await server.complete(claim.claim, OPTIONS)
      }
      expect(await fillSqliteStore(db, { path, count: COUNT, generationRecords: 100, expired: true })).toBe(COUNT)
      const now = Date.now()
      const tables = (db.prepare('SELECT id FROM email_webhook_dedup_gen').pluck().all() as number[]).map(
        (id) => `email_webhook_dedup_g${id}`,
      )
      const mixed = ['email_webhook_dedup_now', ...tables].filter((table) => {
        const row = db.prepare(`SELECT count(*) AS n, sum(expires_at <= ?) AS expired FROM ${table}`).get(now) as {
          n: number
          expired: number
        }
        return row.expired > 0 && row.expired < row.n
      })
      expect(mixed).toEqual([])
      expect(server.purgeExpired()).toBe(COUNT)
      expect(db.prepare('SELECT count(*) FROM email_webhook_dedup_done WHERE expires_at <= ?').pluck().get(Date.now())).toBe(0)
      expect(await server.lookup('default:warm-up-0')).toBe('done')
    } finally {
      db.close()
      await server.close()
    }
  })

  it('fills the hand-written receiver’s table', () => {
    const db = new Database(join(dir, 'hand.db'))
    expect(fillSqliteHand(db, { count: COUNT })).toBe(COUNT)
    expect(db.prepare('SELECT count(*) FROM hand_seen').pluck().get()).toBe(COUNT)
    db.close()
  })
})

describe('PostgreSQL', () => {
  it('fills done records the store reads as its own, and an expired backlog its purge removes', async () => {
    const table = 'fill_test'
    const store = new PostgresDedupStore({ connectionString: postgresUrl, table })
    const client = new pg.Client({ connectionString: postgresUrl })
    await client.connect()
    try {
      await store.lookup('default:none') // creates the table as the store does
      expect(await fillPostgresTable(client, { table, count: COUNT })).toBe(COUNT)
      expect(await fillPostgresTable(client, { table, count: COUNT, expired: true })).toBe(COUNT)
      const live = (await client.query(`SELECT key FROM ${table} WHERE expires_at > now()`)).rows.map((row) => row.key)
      const span = (
        await client.query(
          `SELECT extract(epoch FROM max(expires_at) - min(expires_at)) * 1000 AS ms, extract(epoch FROM max(expires_at) - now()) * 1000 AS ahead FROM ${table} WHERE expires_at > now()`,
        )
      ).rows[0]
      expect(Number(span.ms)).toBeGreaterThan(WEEK_MS / 2)
      expect(Number(span.ahead)).toBeLessThanOrEqual(WEEK_MS)
      // Purge before any claim: a claim may start the store's background purge (a second after the
      // store was made; CI failed once on this when the fills took longer), which would take the
      // expired rows first.
      const gone = (await client.query(`SELECT key FROM ${table} WHERE expires_at <= now()`)).rows.map((row) => row.key)
      expect(gone).toHaveLength(COUNT)
      expect(await store.lookup(gone[0])).toBe('absent')
      expect(await store.purgeExpired()).toBe(COUNT)
      await expectDone(store, live)
      expect(await fillPostgresHand(client, { count: COUNT, table: 'fill_test_hand' })).toBe(COUNT)
      expect(Number((await client.query('SELECT count(*) FROM fill_test_hand')).rows[0].count)).toBe(COUNT)
    } finally {
      await client.end()
      await store.close()
    }
  })
})

describe('Redis', () => {
  it('fills done records the store reads as its own, expiring within the retention', async () => {
    const prefix = 'fill-test:'
    const store = new RedisDedupStore({ url: redisUrl, prefix })
    const client = new Redis(redisUrl)
    try {
      expect(await fillRedisKeys(client, { prefix, count: COUNT })).toBe(COUNT)
      const keys = (await client.keys(`${prefix}default:*`)).map((key) => key.slice(prefix.length))
      await expectDone(store, keys)
      const ttls = await Promise.all(keys.map((key) => client.pttl(prefix + key)))
      expect(Math.max(...ttls)).toBeLessThanOrEqual(WEEK_MS)
      expect(Math.min(...ttls)).toBeGreaterThan(0)
      expect(await fillRedisHand(client, { count: COUNT })).toBe(COUNT)
      expect(await client.keys('hand:*')).toHaveLength(COUNT)
    } finally {
      client.disconnect()
      await store.close()
    }
  })
})
