/**
 * What the PostgreSQL and Redis stores do beyond the conformance suite, against real servers:
 * typed errors that never show the password, the table SQL for hand-run migrations, the Redis
 * durability check, and close() leaving a given pool or client open.
 */
import { DedupStoreError } from '@email-webhooks/core'
import { DEFAULT_POSTGRES_TABLE, PostgresDedupStore, postgresDedupTableSql } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, type RunningServer, startPostgres, startRedis } from '../services/servers.js'
import { scaled } from '../support/time.js'

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
let postgres: RunningServer
let redis: RunningServer

beforeAll(async () => {
  ;[postgres, redis] = await Promise.all([startPostgres(), startRedis()])
})
afterAll(async () => {
  await Promise.all([postgres?.stop(), redis?.stop()])
})

/** The error a store call rejects with, and everything about it a log could print. */
async function failure(promise: Promise<unknown>): Promise<{ error: DedupStoreError; printed: string }> {
  const error = await promise.then(
    () => expect.unreachable('the call should have failed'),
    (error: unknown) => error,
  )
  expect(error).toBeInstanceOf(DedupStoreError)
  const cause = (error as Error).cause as Error | undefined
  const printed = [String(error), (error as Error).stack, JSON.stringify(error), String(cause), cause?.stack, JSON.stringify(cause)].join(
    '\n',
  )
  return { error: error as DedupStoreError, printed }
}

const withPassword = (url: string, password: string) => {
  const parsed = new URL(url)
  parsed.password = password
  return parsed.toString()
}

describe('PostgresDedupStore', () => {
  it("rejects with code 'auth_failed' on a wrong password, and never shows the password", async () => {
    const wrong = 'not-the-password-7d1f'
    const store = new PostgresDedupStore({ connectionString: withPassword(postgres.url, wrong) })
    try {
      const { error, printed } = await failure(store.claim('k', LONG))
      expect(error.code).toBe('auth_failed')
      expect(error.message).toMatch(/\[@email-webhooks\/core\/postgres\].*refused the credentials.*check the user name and password/)
      expect(error.message).toContain('postgres://webhooks:***@127.0.0.1')
      expect(printed).not.toContain(wrong)
    } finally {
      await store.close()
    }
  })

  it("rejects with code 'connection_failed' when nothing listens, naming the server without its password", async () => {
    const url = `postgres://webhooks:${postgres.password}@127.0.0.1:${await freePort()}/postgres`
    const store = new PostgresDedupStore({ connectionString: url })
    try {
      const { error, printed } = await failure(store.claim('k', LONG))
      expect(error.code).toBe('connection_failed')
      expect(error.message).toMatch(/cannot reach PostgreSQL at postgres:\/\/webhooks:\*\*\*@127\.0\.0\.1:\d+\/postgres \(ECONNREFUSED\)/)
      expect(printed).not.toContain(postgres.password)
    } finally {
      await store.close()
    }
  })

  it("rejects with code 'misconfigured' when the database does not exist", async () => {
    const store = new PostgresDedupStore({ connectionString: postgres.url.replace(/\/postgres$/, '/no_such_db') })
    try {
      const { error, printed } = await failure(store.claim('k', LONG))
      expect(error.code).toBe('misconfigured')
      expect(error.message).toMatch(/database does not exist/)
      expect(printed).not.toContain(postgres.password)
    } finally {
      await store.close()
    }
  })

  it("with createTable: false, rejects with 'misconfigured' until the exported SQL has been run, then works", async () => {
    const table = 'hooks_migrated_by_hand'
    const store = new PostgresDedupStore({ connectionString: postgres.url, table, createTable: false })
    const pool = new pg.Pool({ connectionString: postgres.url, max: 1 })
    try {
      const { error } = await failure(store.claim('k', LONG))
      expect(error.code).toBe('misconfigured')
      expect(error.message).toMatch(/dedup table is missing.*postgresDedupTableSql\(\)/)
      await pool.query(postgresDedupTableSql(table))
      expect((await store.claim('k', LONG)).status).toBe('acquired')
      // A regular (logged) table: relpersistence 'p', not 'u'.
      const { rows } = await pool.query('SELECT relpersistence FROM pg_class WHERE relname = $1', [table])
      expect(rows).toEqual([{ relpersistence: 'p' }])
    } finally {
      await store.close()
      await pool.end()
    }
  })

  it('creates the same table as the exported SQL when several stores start at once', async () => {
    const stores = Array.from(
      { length: 4 },
      () => new PostgresDedupStore({ connectionString: postgres.url, table: 'hooks_created_at_once' }),
    )
    try {
      const results = await Promise.all(stores.map((store) => store.claim('same-key', LONG)))
      expect(results.filter((result) => result.status === 'acquired')).toHaveLength(1)
    } finally {
      await Promise.all(stores.map((store) => store.close()))
    }
    expect(postgresDedupTableSql()).toContain(`CREATE TABLE IF NOT EXISTS ${DEFAULT_POSTGRES_TABLE} (`)
    expect(() => postgresDedupTableSql('bad name; DROP TABLE x')).toThrow(TypeError)
  })

  it('flushes the WAL for every complete() even on a session with synchronous_commit = off', async () => {
    // One connection with asynchronous commits; pg_stat_wal counts the WAL flushes (wal_sync).
    const pool = new pg.Pool({ connectionString: postgres.url, max: 1, options: '-c synchronous_commit=off' })
    const store = new PostgresDedupStore({ pool, table: 'hooks_sync_commit' })
    const walSyncs = async (): Promise<number> => {
      await pool.query('SELECT pg_stat_force_next_flush()')
      await pool.query('SELECT 1')
      const { rows } = await pool.query('SELECT wal_sync FROM pg_stat_wal')
      return Number(rows[0].wal_sync)
    }
    try {
      expect((await pool.query('SHOW synchronous_commit')).rows).toEqual([{ synchronous_commit: 'off' }])
      const claims = []
      for (let i = 0; i < 100; i++) {
        const result = await store.claim(crypto.randomUUID(), LONG)
        if (result.status === 'acquired') claims.push(result.claim)
      }
      const before = await walSyncs()
      for (const claim of claims.slice(0, 50)) expect(await store.complete(claim, LONG)).toBe(true)
      const afterCompletes = await walSyncs()
      // The same update without the store's setting: asynchronous, next to no flushes.
      for (const claim of claims.slice(50)) {
        await pool.query('UPDATE hooks_sync_commit SET done = true WHERE key = $1 AND token = $2', [claim.key, claim.token])
      }
      const afterPlain = await walSyncs()
      console.log(`WAL flushes: 50 complete() ${afterCompletes - before}, 50 plain updates ${afterPlain - afterCompletes}`)
      expect(afterCompletes - before).toBeGreaterThanOrEqual(50)
      expect(afterPlain - afterCompletes).toBeLessThan(25)
    } finally {
      await store.close()
      await pool.end()
    }
  })

  it('commits a claim without a WAL flush of its own and a complete with one, whatever the session says', async () => {
    // Every statement of the store runs in an explicit transaction of its own on one connection,
    // with the session's synchronous_commit set first; SHOW before COMMIT reads what the commit
    // will use (set_config(…, true) lasts until the transaction ends).
    const table = 'hooks_claim_commit'
    const client = new pg.Client({ connectionString: postgres.url })
    await client.connect()
    let session: 'on' | 'off' = 'on'
    let step = 'setup'
    const seen: { step: string; commit: string }[] = []
    const pool = {
      query: async (text: string, values?: unknown[]) => {
        await client.query(`SET synchronous_commit = ${session}`)
        await client.query('BEGIN')
        try {
          const result = await client.query(text, values)
          const shown = await client.query('SHOW synchronous_commit')
          seen.push({ step, commit: shown.rows[0].synchronous_commit })
          await client.query('COMMIT')
          return result
        } catch (error) {
          await client.query('ROLLBACK')
          throw error
        }
      },
      end: () => Promise.resolve(),
    }
    // The tables first, through a plain store: their DDL has a transaction of its own.
    const creator = new PostgresDedupStore({ connectionString: postgres.url, table })
    const store = new PostgresDedupStore({ pool, table })
    const order = { key: 'default:email:claim-commit', mark: { createdAtMs: 1, eventId: 'e1', type: 'email.sent' }, fact: 'email.sent|1' }
    try {
      await creator.lookup('create the tables')
      await store.lookup('ready')
      /** Runs `call` as `name` on a session whose synchronous_commit is `setting`. */
      const as = async <T>(name: string, setting: 'on' | 'off', call: () => Promise<T>): Promise<T> => {
        step = name
        session = setting
        return call()
      }
      for (const ordered of [false, true]) {
        const key = crypto.randomUUID()
        const opts = ordered ? { ...LONG, order } : LONG
        const suffix = ordered ? ' ordered' : ''
        const result = await as(`claim${suffix}`, 'on', () => store.claim(key, opts))
        if (result.status !== 'acquired') expect.unreachable(`not acquired: ${result.status}`)
        expect(await as(`complete${suffix}`, 'off', () => store.complete(result.claim, opts))).toBe(true)
      }
      expect(seen.filter((one) => one.step !== 'setup')).toEqual([
        { step: 'claim', commit: 'off' },
        { step: 'complete', commit: 'on' },
        { step: 'claim ordered', commit: 'off' },
        { step: 'complete ordered', commit: 'on' },
      ])
    } finally {
      await store.close()
      await creator.close()
      await client.end()
    }
  })

  it('leaves a given pool open on close(), and refuses calls after close()', async () => {
    const pool = new pg.Pool({ connectionString: postgres.url, max: 2 })
    const store = new PostgresDedupStore({ pool })
    try {
      expect((await store.claim(crypto.randomUUID(), LONG)).status).toBe('acquired')
      await store.close()
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
      const { error } = await failure(store.claim('k', LONG))
      expect(error.code).toBe('closed')
    } finally {
      await pool.end()
    }
  })

  it('refuses options without exactly one of connectionString and pool', () => {
    expect(() => new PostgresDedupStore({})).toThrow(/exactly one of \{ connectionString \} or \{ pool \}/)
    expect(() => new PostgresDedupStore({ connectionString: postgres.url, pool: new pg.Pool() })).toThrow(TypeError)
    expect(() => new PostgresDedupStore({ connectionString: postgres.url, table: 'x-y' })).toThrow(/plain SQL identifier/)
  })
})

describe('RedisDedupStore', () => {
  it("rejects with code 'auth_failed' on a wrong password, and never shows the password", async () => {
    const wrong = 'not-the-password-9c2e'
    const store = new RedisDedupStore({ url: withPassword(redis.url, wrong) })
    try {
      const { error, printed } = await failure(store.claim('k', LONG))
      expect(error.code).toBe('auth_failed')
      expect(error.message).toMatch(/\[@email-webhooks\/core\/redis\] Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ refused the credentials/)
      expect(printed).not.toContain(wrong)
    } finally {
      await store.close()
    }
  })

  it("rejects with code 'connection_failed' within seconds when nothing listens", async () => {
    const store = new RedisDedupStore({ url: `redis://:${redis.password}@127.0.0.1:${await freePort()}` })
    try {
      const started = Date.now()
      const { error, printed } = await failure(store.claim('k', LONG))
      expect(error.code).toBe('connection_failed')
      expect(error.message).toMatch(/cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+/)
      expect(printed).not.toContain(redis.password)
      expect(Date.now() - started).toBeLessThan(scaled(10_000))
    } finally {
      await store.close()
    }
  })

  it("refuses a server without appendfsync always or with an evicting policy ('misconfigured'), unless checkDurability is false", async () => {
    const loose = await startRedis({ args: ['--appendfsync', 'everysec', '--maxmemory-policy', 'volatile-lru'] })
    const strict = new RedisDedupStore({ url: loose.url })
    const relaxed = new RedisDedupStore({ url: loose.url, checkDurability: false })
    try {
      const { error } = await failure(strict.claim('k', LONG))
      expect(error.code).toBe('misconfigured')
      expect(error.message).toContain('appendfsync is everysec (set appendfsync always)')
      expect(error.message).toContain('maxmemory-policy is volatile-lru (set maxmemory-policy noeviction)')
      expect((await relaxed.claim('k', LONG)).status).toBe('acquired')
    } finally {
      await Promise.all([strict.close(), relaxed.close()])
      await loose.stop()
    }
  })

  it('stores keys under the prefix with a TTL of lease + retention, then of the retention once done', async () => {
    const client = new Redis(redis.url)
    const store = new RedisDedupStore({ client, prefix: 'ttl-test:' })
    try {
      const key = crypto.randomUUID()
      const result = await store.claim(key, { leaseMs: 10_000, retentionMs: 50_000 })
      expect(result.status).toBe('acquired')
      const leaseTtl = await client.pttl(`ttl-test:${key}`)
      expect(leaseTtl).toBeGreaterThan(55_000)
      expect(leaseTtl).toBeLessThanOrEqual(60_000)
      if (result.status === 'acquired') await store.complete(result.claim, { retentionMs: 20_000 })
      const doneTtl = await client.pttl(`ttl-test:${key}`)
      expect(doneTtl).toBeGreaterThan(15_000)
      expect(doneTtl).toBeLessThanOrEqual(20_000)
      await store.close()
      // The given client is still open.
      expect(await client.ping()).toBe('PONG')
    } finally {
      await client.quit()
    }
  })

  it('refuses options without exactly one of url and client', () => {
    expect(() => new RedisDedupStore({})).toThrow(/exactly one of \{ url \} or \{ client \}/)
    expect(() => new RedisDedupStore({ url: 'http://127.0.0.1' })).toThrow(/redis:\/\/ or rediss:\/\//)
  })
})
