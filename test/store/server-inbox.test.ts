/**
 * What the PostgreSQL and Redis inboxes do beyond the inbox conformance suite, against real
 * servers: the inbox table's creation (with the store's tables, later, or by hand), enqueues
 * flushed whatever the session says, the purge of done entries, takes through indexes, Redis keys
 * in one slot with done entries expiring, and the enqueue on Redis's durability path.
 */
import { DedupStoreError, type InboxItem, type InboxLease } from '@email-webhooks/core'
import { PostgresDedupStore, type PostgresPool, postgresDedupTableSql } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { Redis } from 'ioredis'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { type RunningServer, startRedis } from '../services/servers.js'
import { LONG, type ServerKind, sleep, useServers } from './process-harness.js'

// Both servers are started before the first test (useServers' beforeAll).
const servers = useServers() as Record<ServerKind, RunningServer>

const item = (extra: Partial<InboxItem> = {}): InboxItem => {
  const id = crypto.randomUUID()
  return { key: `default:${id}`, type: 'email.bounced', payload: JSON.stringify({ id, secret: 'payload-text' }), timestamp: 1, ...extra }
}

async function rejection(promise: Promise<unknown>): Promise<DedupStoreError> {
  const error = await promise.then(
    () => expect.unreachable('the call should have failed'),
    (error: unknown) => error,
  )
  expect(error).toBeInstanceOf(DedupStoreError)
  return error as DedupStoreError
}

/** A one-connection pool to look into the database, ended after `run`. */
async function withPool(run: (pool: pg.Pool) => Promise<void>, options: pg.PoolConfig = {}): Promise<void> {
  const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 1, ...options })
  try {
    await run(pool)
  } finally {
    await pool.end()
  }
}

/** How many WAL flushes the server counted so far (pg_stat_wal), through `pool`'s one connection. */
async function walSyncs(pool: pg.Pool): Promise<number> {
  await pool.query('SELECT pg_stat_force_next_flush()')
  await pool.query('SELECT 1')
  return Number((await pool.query('SELECT wal_sync FROM pg_stat_wal')).rows[0].wal_sync)
}

describe('PostgresDedupStore: the inbox table', () => {
  it('creates <table>_inbox with the store tables, and on first inbox use when the dedup table predates it', async () => {
    await withPool(async (pool) => {
      await pool.query(postgresDedupTableSql('inbox_legacy'))
      expect((await pool.query(`SELECT to_regclass('inbox_legacy_inbox') IS NOT NULL AS there`)).rows).toEqual([{ there: true }])
      await pool.query('DROP TABLE inbox_legacy_inbox')
      const store = new PostgresDedupStore({ connectionString: servers.postgres.url, table: 'inbox_legacy' })
      try {
        expect((await store.claim(crypto.randomUUID(), LONG)).status).toBe('acquired')
        expect(await store.inbox.enqueue(item(), LONG)).toBe('queued')
        expect((await pool.query(`SELECT to_regclass('inbox_legacy_inbox') IS NOT NULL AS there`)).rows).toEqual([{ there: true }])
      } finally {
        await store.close()
      }
    })
  })

  it("with createTable: false, rejects inbox calls with 'misconfigured' until the table is there, then works without a restart", async () => {
    await withPool(async (pool) => {
      await pool.query(postgresDedupTableSql('inbox_by_hand'))
      await pool.query('DROP TABLE inbox_by_hand_inbox')
      const store = new PostgresDedupStore({ connectionString: servers.postgres.url, table: 'inbox_by_hand', createTable: false })
      try {
        const error = await rejection(store.inbox.enqueue(item(), LONG))
        expect(error.code).toBe('misconfigured')
        expect(error.message).toMatch(/inbox table inbox_by_hand_inbox is missing and createTable is false.*postgresDedupTableSql\(\)/)
        expect((await store.claim(crypto.randomUUID(), LONG)).status).toBe('acquired')
        await pool.query(postgresDedupTableSql('inbox_by_hand'))
        await sleep(1_100)
        expect(await store.inbox.enqueue(item(), LONG)).toBe('queued')
      } finally {
        await store.close()
      }
    })
  })

  it('flushes the WAL for every enqueue even on a session with synchronous_commit = off', async () => {
    await withPool(
      async (pool) => {
        const store = new PostgresDedupStore({ pool, table: 'inbox_sync_commit' })
        try {
          expect((await pool.query('SHOW synchronous_commit')).rows).toEqual([{ synchronous_commit: 'off' }])
          await store.inbox.stats()
          const before = await walSyncs(pool)
          for (let i = 0; i < 50; i++) expect(await store.inbox.enqueue(item(), LONG)).toBe('queued')
          const afterEnqueues = await walSyncs(pool)
          // The same insert without the store's setting: asynchronous, next to no flushes.
          for (let i = 0; i < 50; i++) {
            await pool.query(
              `INSERT INTO inbox_sync_commit_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at)
               VALUES ($1, 't', 'p', 1, 'pending', 0, now(), now())`,
              [crypto.randomUUID()],
            )
          }
          const afterPlain = await walSyncs(pool)
          expect(afterEnqueues - before).toBeGreaterThanOrEqual(50)
          expect(afterPlain - afterEnqueues).toBeLessThan(25)
        } finally {
          await store.close()
        }
      },
      { options: '-c synchronous_commit=off' },
    )
  })

  it('lets takes and finishes commit without a WAL flush of their own, on a session with synchronous_commit = on', async () => {
    await withPool(async (pool) => {
      const store = new PostgresDedupStore({ pool, table: 'inbox_lazy_commit' })
      try {
        expect((await pool.query('SHOW synchronous_commit')).rows).toEqual([{ synchronous_commit: 'on' }])
        for (let i = 0; i < 50; i++) await store.inbox.enqueue(item(), LONG)
        const before = await walSyncs(pool)
        for (let i = 0; i < 50; i++) {
          const lease = await store.inbox.take({ leaseMs: 60_000, ordered: false })
          expect(lease && (await store.inbox.finish(lease, LONG))).toBe(true)
        }
        // 100 commits; the WAL writer flushes on its own a few times meanwhile.
        expect((await walSyncs(pool)) - before).toBeLessThan(50)
      } finally {
        await store.close()
      }
    })
  })

  it('purgeExpired() deletes done entries past their retention and keeps the others', async () => {
    await withPool(async (pool) => {
      const store = new PostgresDedupStore({ connectionString: servers.postgres.url, table: 'inbox_purge' })
      try {
        const [short, long, waiting] = [item(), item(), item()]
        for (const one of [short, long, waiting]) await store.inbox.enqueue(one, LONG)
        const leases = new Map<string, InboxLease>()
        for (let i = 0; i < 3; i++) {
          const lease = await store.inbox.take({ leaseMs: 60_000, ordered: false })
          if (lease) leases.set(lease.key, lease)
        }
        expect(await store.inbox.finish(leases.get(short.key) as InboxLease, { retentionMs: 100 })).toBe(true)
        expect(await store.inbox.finish(leases.get(long.key) as InboxLease, { retentionMs: 60_000 })).toBe(true)
        await sleep(200)
        expect(await store.inbox.get(short.key)).toBeUndefined()
        expect(await store.purgeExpired()).toBeGreaterThanOrEqual(1)
        const { rows } = await pool.query('SELECT key, state FROM inbox_purge_inbox ORDER BY state')
        expect(rows).toEqual([
          { key: long.key, state: 'done' },
          { key: waiting.key, state: 'running' },
        ])
      } finally {
        await store.close()
      }
    })
  })

  it('takes through the due and order indexes and forgets through the done index, never scanning the whole table', async () => {
    const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 2 })
    const sent: { text: string; values?: unknown[] }[] = []
    const watched: PostgresPool = {
      query: (text, values) => {
        sent.push({ text, values })
        return pool.query(text, values)
      },
      end: () => Promise.resolve(),
    }
    const store = new PostgresDedupStore({ pool: watched, table: 'inbox_plan' })
    try {
      await store.inbox.take({ leaseMs: 1_000, ordered: false })
      await store.inbox.take({ leaseMs: 1_000, ordered: true })
      await store.purgeExpired()
      const takes = sent.filter(({ text }) => text.includes('next AS (') && text.includes('inbox_plan_inbox'))
      const forget = sent.find(({ text }) => text.startsWith('DELETE FROM inbox_plan_inbox'))
      expect(takes).toHaveLength(2)
      const client = await pool.connect()
      try {
        await client.query('SET enable_seqscan = off')
        const plan = async ({ text, values }: { text: string; values?: unknown[] }) =>
          (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values)).rows.map((row) => row['QUERY PLAN']).join('\n')
        for (const take of takes) {
          const shown = await plan(take)
          expect(shown).not.toMatch(/Seq Scan/)
          expect(shown).toMatch(/inbox_plan_inbox_due/)
        }
        expect(await plan(takes[1] as (typeof takes)[number])).toMatch(/inbox_plan_inbox_order/)
        expect(await plan(forget as (typeof takes)[number])).toMatch(/Index Cond: \(expires_at <= now\(\)\)/)
      } finally {
        client.release()
      }
    } finally {
      await store.close()
      await pool.end()
    }
  })

  it('counts stats() through the due and dead indexes, never reading the done entries a week of retention keeps', async () => {
    const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 2 })
    const sent: string[] = []
    const watched: PostgresPool = {
      query: (text, values) => {
        sent.push(text)
        return pool.query(text, values)
      },
      end: () => Promise.resolve(),
    }
    const store = new PostgresDedupStore({ pool: watched, table: 'inbox_stats' })
    try {
      expect(await store.inbox.stats()).toEqual({ pending: 0, running: 0, dead: 0, oldestPendingAt: null })
      // 200,000 done entries, 50 dead, 20 pending, 5 running and 3 running whose lease lapsed
      // (pending). The oldest waiting entry is a lapsed one (2 hours); the live leases are older
      // still (3 hours) and the dead ones older than the pending ones: neither may count.
      await pool.query(
        `INSERT INTO inbox_stats_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at, ended_at, expires_at)
         SELECT 'default:' || g, 'email.sent', '{}', 1,
           CASE WHEN g <= 50 THEN 'dead' WHEN g <= 70 THEN 'pending' WHEN g <= 78 THEN 'running' ELSE 'done' END, 1,
           CASE WHEN g BETWEEN 71 AND 75 THEN now() - interval '3 hours' WHEN g = 76 THEN now() - interval '2 hours'
             ELSE now() - interval '1 hour' + g * interval '1 second' END,
           CASE WHEN g <= 75 THEN now() + interval '1 hour' ELSE now() - interval '1 second' END,
           now(), now() + interval '7 days'
         FROM generate_series(1, 200000) g`,
      )
      await pool.query('ANALYZE inbox_stats_inbox')
      // The lapsed entry's own enqueued_at (the insert's now(), which a busy machine's 200,000 rows
      // put seconds before any later statement's: CI's took 6 s).
      const oldest = Number(
        (await pool.query(`SELECT floor(extract(epoch FROM enqueued_at) * 1000) AS ms FROM inbox_stats_inbox WHERE key = 'default:76'`))
          .rows[0].ms,
      )
      const stats = await store.inbox.stats()
      expect(stats).toMatchObject({ pending: 23, running: 5, dead: 50, oldestPendingAt: oldest })
      const text = sent.find((t) => t.includes('AS dead') && t.includes('inbox_stats_inbox')) as string
      const plan = (await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`)).rows.map((row) => row['QUERY PLAN']).join('\n')
      expect(plan).not.toMatch(/Seq Scan/)
      // The order index has the due index's condition: the planner may read either.
      expect(plan).toMatch(/inbox_stats_inbox_(due|order)/)
      expect(plan).toMatch(/inbox_stats_inbox_dead/)
    } finally {
      await store.close()
      await pool.end()
    }
  })

  it("rejects durations that are not whole milliseconds with 'invalid_options', on both servers' inboxes", async () => {
    const stores = [
      new PostgresDedupStore({ connectionString: servers.postgres.url, table: 'inbox_durations' }),
      new RedisDedupStore({ url: servers.redis.url, prefix: 'inbox-durations:' }),
    ]
    try {
      for (const store of stores) {
        for (const call of [
          () => store.inbox.take({ leaseMs: 1.5, ordered: false }),
          () => store.inbox.enqueue(item(), { retentionMs: 0 }),
          () => store.inbox.purge({ olderThanMs: -1 }),
          () => store.inbox.list({ limit: 0 }),
        ]) {
          expect((await rejection(call())).code).toBe('invalid_options')
        }
      }
    } finally {
      await Promise.all(stores.map((store) => store.close()))
    }
  })
})

describe.each(['postgres', 'redis'] as const)('%s inbox: ordered takes behind a backlog', (kind) => {
  it('finds the one takeable entry behind 250 held back entries of one email', async () => {
    const store =
      kind === 'postgres'
        ? new PostgresDedupStore({ connectionString: servers.postgres.url, table: 'inbox_backlog' })
        : new RedisDedupStore({ url: servers.redis.url, prefix: 'inbox-backlog:' })
    try {
      const orderKey = `email-${crypto.randomUUID()}`
      const backlog = Array.from({ length: 250 }, (_, n) => item({ orderKey, createdAtMs: 1_000 + n }))
      for (const one of backlog) await store.inbox.enqueue(one, LONG)
      const other = item()
      await store.inbox.enqueue(other, LONG)
      const first = await store.inbox.take({ leaseMs: 60_000, ordered: true })
      expect(first?.item.createdAtMs).toBe(1_000)
      // The other 249 of the email wait for it: the next take passes them all.
      expect((await store.inbox.take({ leaseMs: 60_000, ordered: true }))?.key).toBe(other.key)
      expect(await store.inbox.take({ leaseMs: 60_000, ordered: true })).toBeUndefined()
      expect(first && (await store.inbox.finish(first, LONG))).toBe(true)
      expect((await store.inbox.take({ leaseMs: 60_000, ordered: true }))?.item.createdAtMs).toBe(1_001)
    } finally {
      await store.close()
    }
  })
})

describe('RedisDedupStore: the inbox keys and durability', () => {
  it("keeps every inbox key under '<prefix>{inbox}:' (one cluster slot), and expires a done entry with its retention", async () => {
    const client = new Redis(servers.redis.url)
    const store = new RedisDedupStore({ client, prefix: 'inbox-keys:' })
    try {
      const entry = item({ orderKey: 'email-1', createdAtMs: 5 })
      await store.inbox.enqueue(entry, LONG)
      const hash = `inbox-keys:{inbox}:entry:${entry.key}`
      expect(await client.pttl(hash)).toBe(-1)
      const lease = await store.inbox.take({ leaseMs: 60_000, ordered: true })
      expect(lease?.key).toBe(entry.key)
      const keys = await client.keys('inbox-keys:*')
      // The entry, the running set, and the order key's unfinished and running entries.
      expect(keys.length).toBeGreaterThanOrEqual(4)
      expect(keys.every((key) => key.startsWith('inbox-keys:{inbox}:'))).toBe(true)
      expect(lease && (await store.inbox.finish(lease, { retentionMs: 20_000 }))).toBe(true)
      const ttl = await client.pttl(hash)
      expect(ttl).toBeGreaterThan(15_000)
      expect(ttl).toBeLessThanOrEqual(20_000)
    } finally {
      await store.close()
      await client.quit()
    }
  })

  it("refuses to enqueue on a server without appendfsync always ('misconfigured'), as it refuses completions", async () => {
    const loose = await startRedis({ args: ['--appendfsync', 'everysec'] })
    const store = new RedisDedupStore({ url: loose.url })
    try {
      const error = await rejection(store.inbox.enqueue(item(), LONG))
      expect(error.code).toBe('misconfigured')
      expect(error.message).toContain('appendfsync is everysec (set appendfsync always)')
    } finally {
      await store.close()
      await loose.stop()
    }
  })

  it("with waitFor, rejects an enqueue its replicas do not confirm in time ('durability_timeout'); the entry stays recorded", async () => {
    const store = new RedisDedupStore({ url: servers.redis.url, prefix: 'inbox-wait:', waitFor: { replicas: 1, timeoutMs: 150 } })
    try {
      const entry = item()
      const error = await rejection(store.inbox.enqueue(entry, LONG))
      expect(error.code).toBe('durability_timeout')
      expect(error.message).toMatch(/an inbox entry was written .* but only 0 of 1 replicas confirmed it within 150 ms/)
      expect(error.message).not.toContain('payload-text')
      // The sender's retry finds it recorded; no copies are waited for when nothing was written.
      expect(await store.inbox.enqueue(entry, LONG)).toBe('duplicate')
    } finally {
      await store.close()
    }
  })
})
