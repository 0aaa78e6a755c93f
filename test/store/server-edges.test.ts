/**
 * The edges of the PostgreSQL and Redis stores, against real servers: storage that stays bounded
 * over a long run (purge keeps up; every Redis key carries a TTL), a least-privilege PostgreSQL
 * role, a Redis that forbids CONFIG (one warning), and Redis `waitFor` (WAIT / WAITAOF).
 */
import { DedupStoreError } from '@email-webhooks/core'
import { PostgresDedupStore, type PostgresPool, postgresDedupTableSql } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { Cluster, Redis } from 'ioredis'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { type RunningServer, startRedis } from '../services/servers.js'
import { until } from '../support/time.js'
import { LONG, type ServerKind, sleep, useServers } from './process-harness.js'

// Both servers are started before the first test (useServers' beforeAll).
const servers = useServers() as Record<ServerKind, RunningServer>

/** `pool` given to a store, with `before(text)` awaited before each statement goes out (the store never ends a given pool). */
function watchedPool(pool: pg.Pool, before: (text: string) => unknown): PostgresPool {
  return {
    query: async (text: string, values?: unknown[]) => {
      await before(text)
      return pool.query(text, values)
    },
    end: () => Promise.resolve(),
  }
}

/** A store on `table` and a one-connection pool to look into the table, both closed after `run`. */
async function withStoreAndPool(table: string, run: (store: PostgresDedupStore, pool: pg.Pool) => Promise<void>): Promise<void> {
  const store = new PostgresDedupStore({ connectionString: servers.postgres.url, table })
  const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 1 })
  try {
    await run(store, pool)
  } finally {
    await store.close()
    await pool.end()
  }
}

async function rejection(promise: Promise<unknown>): Promise<DedupStoreError> {
  const error = await promise.then(
    () => expect.unreachable('the call should have failed'),
    (error: unknown) => error,
  )
  expect(error).toBeInstanceOf(DedupStoreError)
  return error as DedupStoreError
}

describe('PostgresDedupStore: bounded storage', () => {
  it('keeps the table bounded over a long run: expired rows are purged as fast as they arrive', async () => {
    // 6,000 events (or 6 s, whichever comes first, but at least 2,000 events or 25 s on a loaded
    // machine) with a 200 ms retention, 8 at a time. Before the fix (500 rows purged per 1,000
    // claims) half of them, ~3,000 expired rows, stayed.
    const table = 'hooks_bounded'
    const retentionMs = 200
    const events = 6_000
    const runMs = 6_000
    const atLeast = 2_000
    const maxMs = 25_000
    await withStoreAndPool(table, async (store, pool) => {
      const rows = async (): Promise<number> => (await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n
      // The tables exist before the sampler's first look (on a loaded machine their creation can take longer than its 500 ms).
      await store.lookup('create the tables')
      const completedAt: number[] = []
      const started = performance.now()
      let next = 0
      const worker = async () => {
        const more = () => {
          const elapsed = performance.now() - started
          return elapsed < runMs || (completedAt.length < atLeast && elapsed < maxMs)
        }
        while (next < events && more()) {
          const result = await store.claim(`bounded-${next++}`, { leaseMs: retentionMs, retentionMs })
          if (result.status !== 'acquired') throw new Error(`a new key was not acquired: ${JSON.stringify(result)}`)
          expect(await store.complete(result.claim, { retentionMs })).toBe(true)
          completedAt.push(performance.now())
        }
      }
      // Every 500 ms: the rows present may only be those completed within the retention plus the
      // purge interval (1 s) and one purge run, plus one batch of slack: the count does not grow with the run.
      const samples: { at: number; rows: number; allowed: number }[] = []
      let running = true
      const sampler = (async () => {
        while (running) {
          await sleep(500)
          const at = performance.now()
          const recent = completedAt.filter((time) => time > at - retentionMs - 1_500).length
          samples.push({ at: Math.round(at - started), rows: await rows(), allowed: recent + 1_000 })
        }
      })()
      await Promise.all(Array.from({ length: 8 }, worker))
      running = false
      await sampler
      const elapsed = performance.now() - started
      const sent = completedAt.length
      // Everything from the run has expired after the retention. Live claims past the purge
      // interval start background purges; within 10 s only those live keys may remain.
      const live: string[] = []
      let left = await rows()
      for (let round = 0; round < 9 && left > live.length; round++) {
        await sleep(1_100)
        const key = `after-the-run-${round}`
        expect((await store.claim(key, LONG)).status).toBe('acquired')
        live.push(key)
        await sleep(100)
        left = await rows()
      }
      console.log(
        `bounded run: ${sent} events in ${Math.round(elapsed)} ms, rows sampled ${samples.map((s) => s.rows).join(', ')}; ${left} left after the purge (${live.length} live)`,
      )
      expect(sent).toBeGreaterThanOrEqual(atLeast)
      expect(samples.length).toBeGreaterThanOrEqual(2)
      for (const sample of samples) expect(sample.rows, `rows at ${sample.at} ms`).toBeLessThanOrEqual(sample.allowed)
      expect(left).toBe(live.length)
    })
  }, 60_000)

  it('purgeExpired() deletes every expired row, batch after batch, and keeps live rows and leases that ended within the hour', async () => {
    const table = 'hooks_purge_all'
    await withStoreAndPool(table, async (store, pool) => {
      for (let i = 0; i < 10; i++) expect((await store.claim(`live-${i}`, LONG)).status).toBe('acquired')
      // Written directly, so no claim starts a background purge meanwhile: 2,500 expired rows (done
      // records past their retention, and leases released over an hour ago: no token, kept until
      // the time their release set).
      await pool.query(
        `INSERT INTO ${table} (key, done, token, attempt, expires_at)
         SELECT 'old-' || i, i % 2 = 0, NULL, 1, clock_timestamp() - interval '1 second' FROM generate_series(1, 2500) AS i`,
      )
      // 10 leases released 30 minutes ago (kept 30 minutes more), 10 that lapsed 30 minutes ago
      // (their holder never came back; kept with their token) and 5 that lapsed two hours ago (gone).
      await pool.query(
        `INSERT INTO ${table} (key, done, token, attempt, expires_at)
         SELECT 'ended-' || i, false, CASE WHEN i % 2 = 0 THEN 'gone-' || i END, 3,
           clock_timestamp() + CASE WHEN i % 2 = 0 THEN interval '-30 minutes' ELSE interval '30 minutes' END
         FROM generate_series(1, 20) AS i`,
      )
      await pool.query(
        `INSERT INTO ${table} (key, done, token, attempt, expires_at)
         SELECT 'lapsed-long-ago-' || i, false, 'gone', 2, clock_timestamp() - interval '2 hours' FROM generate_series(1, 5) AS i`,
      )
      expect(await store.purgeExpired()).toBe(2_505)
      expect(await store.purgeExpired()).toBe(0)
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows).toEqual([{ n: 30 }])
      // Released (ended-1) and lapsed (ended-2) leases keep their attempt count.
      for (const key of ['ended-1', 'ended-2']) {
        const again = await store.claim(key, LONG)
        expect(again.status === 'acquired' && again.claim.attempt).toBe(4)
      }
      // A lease released just now is kept too: the retry is attempt 2, not 1.
      const released = await store.claim('released-now', LONG)
      if (released.status !== 'acquired') throw new Error(`released-now was ${released.status}`)
      expect(await store.release(released.claim)).toBe(true)
      expect(await store.purgeExpired()).toBe(0)
      const retry = await store.claim('released-now', LONG)
      expect(retry.status === 'acquired' && retry.claim.attempt).toBe(2)
      // A released row is free whatever its time says (the database clock may have stepped back).
      await pool.query(
        `INSERT INTO ${table} (key, done, token, attempt, expires_at) VALUES ('released-ahead', false, NULL, 1, clock_timestamp() + interval '10 minutes')`,
      )
      expect(await store.lookup('released-ahead')).toBe('absent')
      const ahead = await store.claim('released-ahead', LONG)
      expect(ahead.status === 'acquired' && ahead.claim.attempt).toBe(2)
    })
  })
})

describe('PostgresDedupStore: leases that end', () => {
  it('lets a slow handler complete its lapsed lease when nobody took the event over, even after a purge', async () => {
    const table = 'hooks_late_complete'
    const store = new PostgresDedupStore({ connectionString: servers.postgres.url, table })
    try {
      const slow = await store.claim('slow', { leaseMs: 50, retentionMs: LONG.retentionMs })
      if (slow.status !== 'acquired') throw new Error(`slow was ${slow.status}`)
      await sleep(100)
      expect(await store.purgeExpired()).toBe(0)
      expect(await store.complete(slow.claim, LONG)).toBe(true)
      expect((await store.claim('slow', LONG)).status).toBe('duplicate')
    } finally {
      await store.close()
    }
  })

  it('claims again, not in_flight, when the holder releases between its claim and its look at the holder', async () => {
    const table = 'hooks_release_race'
    const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 3 })
    const setup = new PostgresDedupStore({ pool, table })
    await setup.lookup('create the table')
    const holder = await pool.connect()
    try {
      // The holder's claim is still uncommitted: the store's claim finds the key free, waits on
      // the holder's row, and finds it held once the holder commits. The holder then releases
      // (its handler threw) just before the store looks at who holds the key.
      await holder.query('BEGIN')
      await holder.query(
        `INSERT INTO ${table} (key, done, token, attempt, expires_at) VALUES ('raced', false, 'holder', 1, clock_timestamp() + interval '1 minute')`,
      )
      const releaseBeforeInspect = (text: string) =>
        text.startsWith('SELECT done, ceil') &&
        pool.query(`UPDATE ${table} SET token = NULL, expires_at = clock_timestamp() + interval '1 hour' WHERE key = 'raced'`)
      const store = new PostgresDedupStore({ pool: watchedPool(pool, releaseBeforeInspect), table })
      const claimed = store.claim('raced', LONG)
      // The holder commits once the store's claim waits on its row (seen in pg_stat_activity; a
      // fixed pause was too short at a load average of 19).
      // pg_stat_activity is read once per transaction unless its snapshot is cleared, and the holder is in one.
      await until(async () => {
        await holder.query('SELECT pg_stat_clear_snapshot()')
        const { rows } = await holder.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%${table}%'`,
        )
        return rows[0].n > 0
      }, "the store's claim to wait on the holder's row")
      await holder.query('COMMIT')
      const result = await claimed
      expect(result.status === 'acquired' && result.claim.attempt).toBe(2)
      await store.close()
    } finally {
      holder.release()
      await setup.close()
      await pool.end()
    }
  })
})

describe('PostgresDedupStore: claims that find the key held', () => {
  it('answer duplicate and in_flight without writing: no transaction id is used', async () => {
    const table = 'hooks_read_only_claims'
    await withStoreAndPool(table, async (store, pool) => {
      // The next transaction id to be given out, read without taking one.
      const nextXid = async () => Number((await pool.query('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x')).rows[0].x)
      const done = await store.claim('done-key', LONG)
      if (done.status !== 'acquired') throw new Error(`done-key was ${done.status}`)
      expect(await store.complete(done.claim, LONG)).toBe(true)
      expect((await store.claim('held-key', LONG)).status).toBe('acquired')
      const before = await nextXid()
      for (let i = 0; i < 20; i++) {
        expect((await store.claim('done-key', LONG)).status).toBe('duplicate')
        const held = await store.claim('held-key', LONG)
        expect(held.status === 'in_flight' && held.retryAfterMs).toBeGreaterThan(50_000)
      }
      expect(await nextXid()).toBe(before)
      // A claim that does acquire writes, as it must.
      expect((await store.claim('new-key', LONG)).status).toBe('acquired')
      expect(await nextXid()).toBeGreaterThan(before)
    })
  })
})

describe('PostgresDedupStore: purge plan', () => {
  it('finds expired rows through the expiry indexes, never by scanning the whole table', async () => {
    const table = 'hooks_purge_plan'
    const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 2 })
    const sent: string[] = []
    const store = new PostgresDedupStore({ pool: watchedPool(pool, (text) => sent.push(text)), table })
    try {
      expect((await store.claim('one', LONG)).status).toBe('acquired')
      await store.purgeExpired()
      const purges = sent.filter((text) => text.includes('now()'))
      expect(purges).toHaveLength(5) // expired rows, leases lapsed an hour ago, expired order marks, order locks whose lease lapsed, expired facts
      // With sequential scans priced out, a plan that still scans has no index it can use: a bound
      // like clock_timestamp() (volatile) cannot be an index condition.
      const client = await pool.connect()
      try {
        await client.query('SET enable_seqscan = off')
        for (const purge of purges) {
          const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${purge}`)).rows.map((row) => row['QUERY PLAN']).join('\n')
          expect(plan).not.toMatch(/Seq Scan/)
          expect(plan).toMatch(/Index Cond: \(expires_at <= (now\(\)|\(now\(\) - '01:00:00'::interval\))\)/)
        }
      } finally {
        client.release()
      }
    } finally {
      await store.close()
      await pool.end()
    }
  })
})

describe('PostgresDedupStore: named prepared statements', () => {
  /** The store's statements prepared on the one connection of `pool`. */
  async function prepared(pool: pg.Pool): Promise<string[]> {
    const rows = (await pool.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'ew\\_%'")).rows
    return rows.map((row) => row.statement)
  }

  it('parses and plans each statement once per connection of a pg.Pool, not on every call', async () => {
    const table = 'hooks_prepared'
    const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 1 })
    const store = new PostgresDedupStore({ pool, table })
    try {
      expect(store.preparedStatements).toBe(true)
      for (const key of ['a', 'b', 'c']) {
        const claimed = await store.claim(key, LONG)
        if (claimed.status !== 'acquired') throw new Error(`claim ${key}: ${claimed.status}`)
        expect(await store.complete(claimed.claim, LONG)).toBe(true)
      }
      expect(await store.claim('a', LONG)).toEqual({ status: 'duplicate' })
      const statements = await prepared(pool)
      // Claim and complete, each once, whatever the number of calls.
      expect(statements.filter((text) => text.includes(`INSERT INTO ${table}`))).toHaveLength(1)
      expect(statements.filter((text) => text.includes(`UPDATE ${table} SET done = true`))).toHaveLength(1)
      const calls = (
        await pool.query<{ calls: string }>(
          'SELECT sum(generic_plans + custom_plans)::text AS calls FROM pg_prepared_statements WHERE statement = $1',
          [statements.find((text) => text.includes(`INSERT INTO ${table}`))],
        )
      ).rows[0]?.calls
      expect(Number(calls)).toBe(4)
    } finally {
      await store.close()
      await pool.end()
    }
  })

  it('sends none with preparedStatements: false, nor through a pool object that is not a pg.Pool', async () => {
    const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 1 })
    const off = new PostgresDedupStore({ pool, table: 'hooks_unprepared', preparedStatements: false })
    const custom = new PostgresDedupStore({ pool: watchedPool(pool, () => {}), table: 'hooks_unprepared' })
    try {
      expect(off.preparedStatements).toBe(false)
      expect(custom.preparedStatements).toBe(false)
      expect((await off.claim('x', LONG)).status).toBe('acquired')
      expect((await custom.claim('y', LONG)).status).toBe('acquired')
      expect(await prepared(pool)).toEqual([])
      expect(() => new PostgresDedupStore({ pool, preparedStatements: 'yes' as unknown as boolean })).toThrow(
        /preparedStatements must be true or false/,
      )
    } finally {
      await off.close()
      await custom.close()
      await pool.end()
    }
  })

  it('goes on with unnamed statements when the server no longer has one it prepared (PgBouncer before 1.21, transaction mode)', async () => {
    const pool = new pg.Pool({ connectionString: servers.postgres.url, max: 1 })
    const warnings: string[] = []
    const store = new PostgresDedupStore({ pool, table: 'hooks_deallocated', warn: (message) => warnings.push(message) })
    try {
      expect((await store.claim('first', LONG)).status).toBe('acquired')
      // The connection forgets its prepared statements while pg still thinks they are there: the
      // next claim's Bind is refused (26000), as behind a pooler that changed server connections.
      await pool.query('DEALLOCATE ALL')
      expect(await prepared(pool)).toEqual([])
      const second = await store.claim('second', LONG)
      expect(second.status).toBe('acquired')
      expect(store.preparedStatements).toBe(false)
      // Said once, naming the cause and the option.
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/26000.*PgBouncer.*preparedStatements: false/)
      expect(await store.claim('first', LONG)).toMatchObject({ status: 'in_flight' })
      expect(await prepared(pool)).toEqual([])
    } finally {
      await store.close()
      await pool.end()
    }
  })
})

describe('PostgresDedupStore: a least-privilege role', () => {
  it('works with createTable on (the default) for a role with only SELECT, INSERT, UPDATE and DELETE on an existing table', async () => {
    const table = 'hooks_least_privilege'
    const role = 'hooks_rw'
    const password = `pw-${crypto.randomUUID()}`
    const admin = new pg.Pool({ connectionString: servers.postgres.url, max: 1 })
    await admin.query(postgresDedupTableSql(table))
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`)
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO ${role}`)
    const url = new URL(servers.postgres.url)
    url.username = role
    url.password = password
    const store = new PostgresDedupStore({ connectionString: url.toString(), table })
    try {
      const { rows } = await admin.query(`SELECT has_schema_privilege($1, 'public', 'CREATE') AS can_create`, [role])
      expect(rows).toEqual([{ can_create: false }])
      const result = await store.claim('least-privilege', LONG)
      if (result.status !== 'acquired') throw new Error(`expected acquired, got ${JSON.stringify(result)}`)
      expect(await store.complete(result.claim, LONG)).toBe(true)
      expect(await store.lookup('least-privilege')).toBe('done')
      expect((await store.claim('least-privilege', LONG)).status).toBe('duplicate')
      expect(await store.purgeExpired()).toBe(0)
    } finally {
      await store.close()
      await admin.end()
    }
  })

  it("still names the missing grant ('misconfigured') when that role meets a missing table", async () => {
    const role = 'hooks_rw_no_table'
    const password = `pw-${crypto.randomUUID()}`
    const admin = new pg.Pool({ connectionString: servers.postgres.url, max: 1 })
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`)
    const url = new URL(servers.postgres.url)
    url.username = role
    url.password = password
    const store = new PostgresDedupStore({ connectionString: url.toString(), table: 'hooks_nobody_created' })
    try {
      const error = await rejection(store.claim('k', LONG))
      expect(error.code).toBe('misconfigured')
      expect(error.message).toMatch(
        /permission denied.*grant the role SELECT, INSERT, UPDATE and DELETE.*and CREATE if the store creates it/,
      )
      expect(error.message).not.toContain(password)
    } finally {
      await store.close()
      await admin.end()
    }
  })
})

describe('RedisDedupStore: bounded storage', () => {
  it('gives every key it writes a TTL: live leases, done records, released and re-claimed keys; lookup writes none', async () => {
    const client = new Redis(servers.redis.url)
    const prefix = `ttl-all-${crypto.randomUUID()}:`
    const store = new RedisDedupStore({ client, prefix })
    try {
      const take = async (key: string, opts = LONG) => {
        const result = await store.claim(key, opts)
        if (result.status !== 'acquired') throw new Error(`expected acquired for ${key}, got ${JSON.stringify(result)}`)
        return result.claim
      }
      await take('in-flight')
      expect(await store.complete(await take('done'), LONG)).toBe(true)
      expect(await store.release(await take('released'))).toBe(true)
      await take('lapsed', { leaseMs: 50, retentionMs: LONG.retentionMs })
      await sleep(100)
      expect((await take('lapsed')).attempt).toBe(2)
      expect(await store.complete(await take('short-retention'), { retentionMs: 5_000 })).toBe(true)
      expect(await store.lookup('never-claimed')).toBe('absent')
      expect((await store.claim('done', LONG)).status).toBe('duplicate')
      expect((await store.claim('in-flight', LONG)).status).toBe('in_flight')

      const keys: string[] = []
      let cursor = '0'
      do {
        const [nextCursor, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 100)
        cursor = nextCursor
        keys.push(...batch)
      } while (cursor !== '0')
      // The schema stamp is two keys that stay (no TTL), however many events come; every event's key expires.
      const stamp = [`${prefix}{inbox}:v`, `${prefix}{inbox}:v-by`]
      expect(keys.filter((key) => stamp.includes(key)).sort()).toEqual(stamp)
      const events = keys.filter((key) => !stamp.includes(key))
      expect(events.map((key) => key.slice(prefix.length)).sort()).toEqual(['done', 'in-flight', 'lapsed', 'released', 'short-retention'])
      for (const key of events) {
        const ttl = await client.pttl(key)
        expect(ttl, `PTTL of ${key}`).toBeGreaterThan(0)
        expect(ttl, `PTTL of ${key}`).toBeLessThanOrEqual(LONG.leaseMs + LONG.retentionMs)
      }
    } finally {
      await store.close()
      await client.quit()
    }
  })
})

describe('RedisDedupStore: leases stay on the server', () => {
  /** Bytes in the server's AOF (INFO persistence). */
  const aofBytes = async (client: Redis) => Number(/^aof_current_size:(\d+)/m.exec(await client.info('persistence'))?.[1])

  it('writes no lease, lock or release to the AOF (no second fsync per event); the done record and the mark survive kill -9, a lease does not, and a claim nobody took over since is still recorded', async () => {
    const redis = await startRedis()
    const admin = new Redis(redis.url)
    const store = new RedisDedupStore({ url: redis.url, prefix: 'local-leases:', warn: () => {} })
    try {
      const take = async (key: string, opts: Parameters<RedisDedupStore['claim']>[1] = LONG) => {
        const result = await store.claim(key, opts)
        if (result.status !== 'acquired') throw new Error(`expected acquired for ${key}, got ${JSON.stringify(result)}`)
        return result.claim
      }
      // The durability check and the scripts' loading write nothing either: start from here.
      await take('warm-up')
      const before = await aofBytes(admin)
      expect(Number.isInteger(before)).toBe(true)
      const inFlight = await take('in-flight')
      const released = await take('released')
      expect(await store.release(released)).toBe(true)
      const order = {
        key: 'local-leases:em_1',
        mark: { createdAtMs: Date.parse('2026-11-25T10:00:00Z'), eventId: 'evt_1', type: 'email.queued' },
      }
      const ordered = await take('ordered', { ...LONG, order })
      expect(await aofBytes(admin), 'claims, an ordered claim and a release append nothing').toBe(before)

      expect(await store.complete(await take('done'), LONG)).toBe(true)
      const afterComplete = await aofBytes(admin)
      expect(afterComplete, 'a complete is appended').toBeGreaterThan(before)
      expect(await store.complete(ordered, { ...LONG, order })).toBe(true)
      expect(await aofBytes(admin), 'an ordered complete is appended').toBeGreaterThan(afterComplete)

      await redis.crashAndRestart()
      // Completed events are still done; the leases died with the process.
      expect((await store.claim('done', LONG)).status).toBe('duplicate')
      expect((await store.claim('ordered', LONG)).status).toBe('duplicate')
      expect(await store.lookup(inFlight.key)).toBe('absent')
      expect(await store.lookup('released')).toBe('absent')
      // A handler that ran while Redis restarted is recorded by its claim: nobody took the event over.
      expect(await store.complete(inFlight, LONG)).toBe(true)
      expect((await store.claim('in-flight', LONG)).status).toBe('duplicate')
      const again = await store.claim('released', { ...LONG, order: { ...order, mark: { ...order.mark, eventId: 'evt_2' } } })
      expect(again.status).toBe('acquired')
      // The mark the ordered complete advanced came back from the AOF with it.
      expect(again.status === 'acquired' && again.order?.mark).toMatchObject({ eventId: 'evt_1', type: 'email.queued' })
      // Taken over, a claim's complete is refused as before.
      expect(await store.complete({ ...inFlight, key: 'released' }, LONG)).toBe(false)
    } finally {
      await store.close()
      admin.disconnect()
      await redis.stop()
    }
  })
})

describe('RedisDedupStore: a server that forbids CONFIG', () => {
  it('warns once, without the password, when CONFIG is renamed away (as managed services do), and goes on', async () => {
    const hidden = await startRedis({ args: ['--rename-command', 'CONFIG', `config-${crypto.randomUUID()}`] })
    const warnings: string[] = []
    const store = new RedisDedupStore({ url: hidden.url, warn: (message) => warnings.push(message) })
    try {
      const first = await Promise.all(Array.from({ length: 5 }, (_, i) => store.claim(`k-${i}`, LONG)))
      expect(first.map((result) => result.status)).toEqual(Array(5).fill('acquired'))
      expect((await store.claim('k-0', LONG)).status).toBe('in_flight')
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/^\[@email-webhooks\/core\/redis\] Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ does not allow CONFIG GET/)
      expect(warnings[0]).toMatch(/appendonly yes, appendfsync always and maxmemory-policy noeviction.*checkDurability: false/)
      expect(warnings[0]).not.toContain(hidden.password)
    } finally {
      await store.close()
      await hidden.stop()
    }
  })

  it('warns once for an ACL user without the CONFIG command (NOPERM), naming no secret', async () => {
    const admin = new Redis(servers.redis.url)
    const user = `no-config-${crypto.randomUUID().slice(0, 8)}`
    const password = `pw-${crypto.randomUUID()}`
    await admin.call('ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '+@all', '-config')
    const url = new URL(servers.redis.url)
    url.username = user
    url.password = password
    const warnings: string[] = []
    const store = new RedisDedupStore({ url: url.toString(), warn: (message) => warnings.push(message) })
    try {
      for (let i = 0; i < 3; i++) expect((await store.claim(`acl-${i}`, LONG)).status).toBe('acquired')
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/does not allow CONFIG GET \(NOPERM/)
      expect(warnings[0]).not.toContain(password)
    } finally {
      await store.close()
      await admin.call('ACL', 'DELUSER', user)
      await admin.quit()
    }
  })

  it('does not warn on a server that allows CONFIG and keeps completions', async () => {
    const warnings: string[] = []
    const store = new RedisDedupStore({ url: servers.redis.url, warn: (message) => warnings.push(message) })
    try {
      expect((await store.claim(crypto.randomUUID(), LONG)).status).toBe('acquired')
      expect(warnings).toEqual([])
    } finally {
      await store.close()
    }
  })
})

describe('RedisDedupStore: waitFor', () => {
  const commandCalls = async (client: Redis, command: string): Promise<number> => {
    const info = await client.info('commandstats')
    return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0)
  }

  it('runs WAIT after each complete: with 0 replicas it resolves at once', async () => {
    const admin = new Redis(servers.redis.url)
    const store = new RedisDedupStore({ url: servers.redis.url, waitFor: { replicas: 0, timeoutMs: 1_000 } })
    try {
      const before = await commandCalls(admin, 'wait')
      for (let i = 0; i < 3; i++) {
        const result = await store.claim(`wait-zero-${i}-${crypto.randomUUID()}`, LONG)
        if (result.status !== 'acquired') throw new Error('expected acquired')
        expect(await store.complete(result.claim, LONG)).toBe(true)
        expect(await store.lookup(result.claim.key)).toBe('done')
      }
      // A refused complete (another claim's token) writes nothing, so it waits for nothing.
      const held = await store.claim(`wait-held-${crypto.randomUUID()}`, LONG)
      if (held.status !== 'acquired') throw new Error('expected acquired')
      expect(await store.complete({ ...held.claim, token: 'forged' }, LONG)).toBe(false)
      expect((await commandCalls(admin, 'wait')) - before).toBe(3)
    } finally {
      await store.close()
      await admin.quit()
    }
  })

  it("rejects complete with 'durability_timeout' when the replicas it waits for do not confirm in time; the record stays done", async () => {
    const store = new RedisDedupStore({ url: servers.redis.url, waitFor: { replicas: 1, timeoutMs: 150 } })
    try {
      const key = `wait-one-${crypto.randomUUID()}`
      const result = await store.claim(key, LONG)
      if (result.status !== 'acquired') throw new Error('expected acquired')
      const error = await rejection(store.complete(result.claim, LONG))
      expect(error.code).toBe('durability_timeout')
      expect(error.message).toMatch(/only 0 of 1 replicas confirmed it within 150 ms, so it is not acknowledged/)
      expect(error.message).not.toContain(servers.redis.password)
      // The sender's retry finds the event done on this server.
      expect((await store.claim(key, LONG)).status).toBe('duplicate')
    } finally {
      await store.close()
    }
  })

  it('with aof: true runs WAITAOF 1 0 after each complete on Redis 7.2+, and says the server is too old before that', async () => {
    const admin = new Redis(servers.redis.url)
    const store = new RedisDedupStore({ url: servers.redis.url, waitFor: { replicas: 0, timeoutMs: 1_000, aof: true } })
    try {
      const version = /^redis_version:(\d+)\.(\d+)/m.exec(await admin.info('server'))
      const [major, minor] = [Number(version?.[1]), Number(version?.[2])]
      const result = await store.claim(`waitaof-${crypto.randomUUID()}`, LONG)
      if (result.status !== 'acquired') throw new Error('expected acquired')
      if (major > 7 || (major === 7 && minor >= 2)) {
        const before = await commandCalls(admin, 'waitaof')
        expect(await store.complete(result.claim, LONG)).toBe(true)
        expect((await commandCalls(admin, 'waitaof')) - before).toBe(1)
      } else {
        console.log(`Redis ${major}.${minor} has no WAITAOF: checking the store's message instead`)
        const error = await rejection(store.complete(result.claim, LONG))
        expect(error.code).toBe('misconfigured')
        expect(error.message).toMatch(
          /does not know WAITAOF \(Redis 7\.2 or later has it\): upgrade the server, or use waitFor without aof/,
        )
      }
    } finally {
      await store.close()
      await admin.quit()
    }
  })

  it("refuses a waitFor it cannot honour at construction ('invalid_options')", () => {
    const invalid = (waitFor: unknown, client?: unknown) => {
      try {
        new RedisDedupStore(
          client ? { client: client as Redis, waitFor: waitFor as never } : { url: servers.redis.url, waitFor: waitFor as never },
        )
      } catch (error) {
        return error as DedupStoreError
      }
      return expect.unreachable('the options should have been refused')
    }
    expect(invalid({ replicas: 1, timeoutMs: 0 }).code).toBe('invalid_options')
    expect(invalid({ replicas: 1, timeoutMs: 0 }).message).toMatch(/waitFor\.timeoutMs must be a whole number of milliseconds/)
    expect(invalid({ replicas: 1.5, timeoutMs: 100 }).message).toMatch(/waitFor\.replicas must be a whole number ≥ 0/)
    const cluster = new Cluster([{ host: '127.0.0.1', port: servers.redis.port }], { lazyConnect: true })
    try {
      expect(invalid({ replicas: 1, timeoutMs: 100 }, cluster).message).toMatch(/does not work with a Cluster client/)
    } finally {
      cluster.disconnect()
    }
  })
})
