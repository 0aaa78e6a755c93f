/**
 * The PostgreSQL store's own pool has the server end a statement a tenth before `queryTimeoutMs`
 * (`statement_timeout`). Before, a claim stuck behind a lock lost its connection at `queryTimeoutMs`
 * and then committed on the server once the lock went: a lease nobody held, and the event's
 * retries met 409 until it ran out (a review's repro: a `LOCK TABLE … IN SHARE MODE` held 1.5 s,
 * `queryTimeoutMs` 1000). Now PostgreSQL rolls it back, the call fails with `timeout` saying so,
 * and the key is free the moment the lock goes. PgBouncer refuses that startup parameter (unless
 * it is in its `ignore_startup_parameters`): the store then connects without it and says so once.
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net'
import { DedupStoreError } from '@email-webhooks/core'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { serverStatementTimeoutMs } from '../../packages/core/src/store/postgres/deadline.js'
import { postgresInboxSql } from '../../packages/core/src/store/postgres/inbox-sql.js'
import { PostgresDedupStore } from '../../packages/core/src/store/postgres/index.js'
import { connect } from '../../packages/core/src/store/postgres/options.js'
import { postgresWithClient } from '../services/servers.js'

const OPTIONS = { leaseMs: 30_000, retentionMs: 3_600_000 }
/** A PostgreSQL of this file's own, and a client on it for the tests' own SQL. */
const db = postgresWithClient({ own: true })

describe('the PostgreSQL store’s server-side statement timeout', () => {
  it('is a tenth under queryTimeoutMs, and none when that leaves less than 1 ms', () => {
    expect(serverStatementTimeoutMs(3_000)).toBe(2_700)
    expect(serverStatementTimeoutMs(1_000)).toBe(900)
    expect(serverStatementTimeoutMs(15)).toBe(13)
    expect(serverStatementTimeoutMs(2)).toBe(1)
    expect(serverStatementTimeoutMs(1)).toBeUndefined()
  })

  it('a claim stuck behind a lock past queryTimeoutMs is rolled back by the server: it fails with timeout, and the key is free once the lock goes', async () => {
    const table = 'statement_timeout_lock'
    const store = new PostgresDedupStore({ connectionString: db.server.url, table, queryTimeoutMs: 4_000 })
    try {
      // The tables first (the store makes them on its first call).
      const first = await store.claim('an-earlier-event', OPTIONS)
      expect(first.status).toBe('acquired')
      // Another session holds a lock that every INSERT and UPDATE of the table waits for, 4.5 s:
      // past the server's 3.6 s and the store's 4 s (400 ms for the server's answer on a busy machine).
      await db.client.query('BEGIN')
      await db.client.query(`LOCK TABLE ${table} IN SHARE MODE`)
      const started = performance.now()
      const claimed = store.claim('the-event', OPTIONS).then(
        (result) => ({ result, error: undefined, at: performance.now() - started }),
        (error: unknown) => ({ result: undefined, error, at: performance.now() - started }),
      )
      await new Promise((resolve) => setTimeout(resolve, 4_500))
      await db.client.query('COMMIT')
      const outcome = await claimed
      expect(outcome.result).toBeUndefined()
      expect(outcome.error).toBeInstanceOf(DedupStoreError)
      const error = outcome.error as DedupStoreError
      expect(error.code).toBe('timeout')
      // The server's answer at 3.6 s, before the store's own deadline (which destroys the connection).
      expect(error.message).toContain('statement_timeout')
      expect(error.message).toContain('kept nothing it would have written')
      expect(outcome.at).toBeGreaterThanOrEqual(3_580)
      // Nothing was left behind: the event's retry takes it at once (before: in flight for the lease's 30 s).
      const retried = await store.claim('the-event', OPTIONS)
      expect(retried.status).toBe('acquired')
      const rows = await db.client.query(`SELECT count(*)::int AS n FROM ${table} WHERE key = 'the-event'`)
      expect(rows.rows[0].n).toBe(1)
    } finally {
      await db.client.query('ROLLBACK').catch(() => {})
      await store.close()
    }
  }, 30_000)

  it('leaves a pool you give with its own settings: no statement_timeout added', async () => {
    const pool = new pg.Pool({ connectionString: db.server.url, max: 2 })
    const store = new PostgresDedupStore({ pool, table: 'statement_timeout_given', queryTimeoutMs: 5_000 })
    try {
      expect((await store.claim('an-event', OPTIONS)).status).toBe('acquired')
      const shown = await pool.query('SHOW statement_timeout')
      expect(shown.rows[0].statement_timeout).toBe('0')
    } finally {
      await store.close()
      await pool.end()
    }
  })

  it('behind a pooler that refuses the startup parameter (PgBouncer by default), connects without it, says so once, and no call fails', async () => {
    const pooler = await refusingPooler(db.server.port)
    const { store, warnings } = storeBehind(pooler, 'statement_timeout_pooler')
    try {
      // First calls at once: each waits for the store to open its tables, whose first statement
      // meets the refusal, so one connection is refused and opened again without the parameter.
      const results = await Promise.all(Array.from({ length: 4 }, (_, i) => store.claim(`event-${i}`, OPTIONS)))
      expect(results.map((result) => result.status)).toEqual(['acquired', 'acquired', 'acquired', 'acquired'])
      expect(await store.claim('event-4', OPTIONS)).toMatchObject({ status: 'acquired' })
      expect(pooler.refused).toBe(1)
      expect(pooler.passed).toBeGreaterThanOrEqual(1)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('refused the startup parameter statement_timeout')
      expect(warnings[0]).toContain("ALTER ROLE <role> IN DATABASE <database> SET statement_timeout = '1800ms'")
      expect(warnings[0]).not.toContain(db.server.password)
    } finally {
      await store.close()
      await pooler.close()
    }
  })

  it('a warm store whose server becomes a refusing pooler: the calls at once, each on a new connection, are all answered within their connect wait, one warning', async () => {
    const pooler = await refusingPooler(db.server.port, { refusing: false })
    const { store, warnings } = storeBehind(pooler, 'statement_timeout_switch')
    try {
      // Warm: the pool's connections opened with the parameter, passed through to PostgreSQL.
      const warm = await Promise.all(Array.from({ length: 8 }, (_, i) => store.claim(`warm-${i}`, OPTIONS)))
      expect(warm.every((result) => result.status === 'acquired')).toBe(true)
      expect(warnings).toEqual([])
      // Now the pooler refuses it, and every open connection is gone: each call opens a new one.
      pooler.refuse()
      pooler.dropAll()
      await new Promise((resolve) => setTimeout(resolve, 50))
      const started = performance.now()
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => store.claim(`event-${i}`, OPTIONS)))
      expect(results.map((result) => result.status)).toEqual(Array(12).fill('acquired'))
      // Within a call's two deadlines (connect wait 1 s, then the statement's 2 s): the second try
      // shares the first's wait and place, not a new call's (which could last twice as long).
      expect(performance.now() - started).toBeLessThan(3_000)
      expect(pooler.refused).toBeGreaterThanOrEqual(1)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('refused the startup parameter statement_timeout')
    } finally {
      await store.close()
      await pooler.close()
    }
  })

  it('a connection string that sets its own statement_timeout keeps it: the store adds none and never drops one', () => {
    const own = connect({ connectionString: `${db.server.url}?statement_timeout=5000` })
    const plain = connect({ connectionString: db.server.url })
    try {
      expect(own.dropStatementTimeout).toBeUndefined()
      expect((own.pool as unknown as { options: Record<string, unknown> }).options.statement_timeout).toBeUndefined()
      expect(plain.dropStatementTimeout).toBeTypeOf('function')
      expect((plain.pool as unknown as { options: Record<string, unknown> }).options.statement_timeout).toBe(2_700)
    } finally {
      void own.pool.end()
      void plain.pool.end()
    }
  })
})

describe('a refused or dropped limit, as the warning advises or as the connection string asks', () => {
  it('says nothing when the role has a limit of its own behind a refusing pooler; a connection string’s own limit that the pooler refuses is misconfigured, saying what to change', async () => {
    const pooler = await refusingPooler(db.server.port)
    const url = new URL(db.server.url)
    url.port = String(pooler.port)
    const warnings: string[] = []
    await db.client.query(`ALTER ROLE webhooks IN DATABASE postgres SET statement_timeout = '5s'`)
    const store = new PostgresDedupStore({ connectionString: url.href, table: 'statement_timeout_role', warn: (m) => warnings.push(m) })
    const own = new PostgresDedupStore({ connectionString: `${url.href}?statement_timeout=5000`, table: 'statement_timeout_role' })
    try {
      expect((await store.claim('an-event', OPTIONS)).status).toBe('acquired')
      expect(pooler.refused).toBe(1)
      expect(warnings).toEqual([])
      const refused = await own.claim('another-event', OPTIONS).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(refused).toBeInstanceOf(DedupStoreError)
      expect((refused as DedupStoreError).code).toBe('misconfigured')
      expect((refused as DedupStoreError).message).toContain('set in the connection string, PGOPTIONS or pg.defaults')
    } finally {
      await db.client.query(`ALTER ROLE webhooks IN DATABASE postgres RESET statement_timeout`)
      await store.close()
      await own.close()
      await pooler.close()
    }
  })
})

/** `count` entries in `table`'s inbox (`key` and `state`: SQL of `i`, 1 to `count`), 2 attempts each, ended an hour ago. */
async function insertEntries(table: string, count: number, key: string, state: string): Promise<void> {
  await db.client.query(`INSERT INTO ${table}_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at, ended_at, expires_at)
    SELECT ${key}, 'email.sent', '{}', 0, ${state}, 2, now(), now(), now() - interval '1 hour', now() + interval '1 day'
    FROM generate_series(1, ${count}) i`)
}

describe('the inbox’s operations over the whole table, each statement within the limit', () => {
  it('walks each chunk as a range of the key, never a scan of the whole table (200,000 entries, 1 % dead, analyzed)', async () => {
    const table = 'statement_timeout_plan'
    const store = new PostgresDedupStore({ connectionString: db.server.url, table })
    try {
      await store.inbox.stats()
      await insertEntries(table, 200_000, 'md5(i::text)', "CASE WHEN i % 100 = 0 THEN 'dead' ELSE 'done' END")
      await db.client.query(`ANALYZE ${table}_inbox`)
      const sql = postgresInboxSql(table)
      for (const [name, statement] of [
        ['retry', sql.retryAll[1]],
        ['purge', sql.purge[1]],
      ] as const) {
        const text = statement.replaceAll('$1', `'7'`).replaceAll('$2', '60000')
        const plan = (await db.client.query(`EXPLAIN ${text}`)).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n')
        expect(plan, `${name}:\n${plan}`).not.toMatch(new RegExp(`Seq Scan on ${table}_inbox`))
      }
      expect(await store.inbox.retry('dead')).toBe(2_000)
    } finally {
      await store.close()
    }
  }, 60_000)

  it('retry(dead), retry(keys) and purge go a chunk of keys (or keys) at a time, and count every entry of 50,000 they change', async () => {
    const table = 'statement_timeout_inbox'
    const store = new PostgresDedupStore({ connectionString: db.server.url, table })
    try {
      await store.inbox.stats()
      // 50,000 entries over three chunks of keys: every third dead (ended an hour ago), the others done.
      await insertEntries(table, 50_000, "'e-' || lpad(i::text, 6, '0')", "CASE WHEN i % 3 = 0 THEN 'dead' ELSE 'done' END")
      expect(await store.inbox.stats()).toMatchObject({ dead: 16_666, pending: 0 })
      expect(await store.inbox.retry('dead')).toBe(16_666)
      expect(await store.inbox.stats()).toMatchObject({ dead: 0, pending: 16_666 })
      const retried = await db.client.query(`SELECT count(*)::int AS n FROM ${table}_inbox WHERE retried_attempts = 2 AND attempts = 0`)
      expect(retried.rows[0].n).toBe(16_666)
      // Dead again; 2,500 of them retried by key (three statements of at most 1,000 keys).
      await db.client.query(`UPDATE ${table}_inbox SET state = 'dead', ended_at = now() - interval '1 hour' WHERE state = 'pending'`)
      const keys = Array.from({ length: 2_500 }, (_, i) => `e-${String((i + 1) * 3).padStart(6, '0')}`)
      expect(await store.inbox.retry([...keys, 'not-an-entry'])).toBe(2_500)
      // Purge: the dead that ended an hour ago go; 10 that just ended, the pending and the done stay.
      await db.client.query(`UPDATE ${table}_inbox SET ended_at = now() WHERE key IN (
        SELECT key FROM ${table}_inbox WHERE state = 'dead' ORDER BY key DESC LIMIT 10)`)
      expect(await store.inbox.purge({ olderThanMs: 60_000 })).toBe(16_666 - 2_500 - 10)
      expect(await store.inbox.stats()).toMatchObject({ dead: 10, pending: 2_500 })
      const left = await db.client.query(`SELECT count(*)::int AS n FROM ${table}_inbox`)
      expect(left.rows[0].n).toBe(33_334 + 2_500 + 10)
    } finally {
      await store.close()
    }
  }, 60_000)

  it('a retry of every dead entry that fails at its second chunk says how many the first retried, and running it again retries the rest', async () => {
    const table = 'chunk_failure_inbox'
    const store = new PostgresDedupStore({ connectionString: db.server.url, table })
    try {
      await store.inbox.stats()
      await insertEntries(table, 15_000, "'e-' || lpad(i::text, 6, '0')", "'dead'")
      // The second chunk of keys (after the first 10,000) meets an error, as a full disk or a lost connection would.
      await db.client.query(`CREATE FUNCTION chunk_failure() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the disk is full'; END $$`)
      await db.client.query(`CREATE TRIGGER chunk_failure BEFORE UPDATE ON ${table}_inbox FOR EACH ROW
        WHEN (OLD.key > 'e-010000') EXECUTE FUNCTION chunk_failure()`)
      const failed = await store.inbox.retry('dead').catch((error: unknown) => error)
      expect(failed).toBeInstanceOf(DedupStoreError)
      expect((failed as Error).message).toContain(
        '(10000 entries were retried before this failure, each batch committed on its own: once the cause is mended, running it again goes on with the rest)',
      )
      expect((failed as { cause?: unknown }).cause).toBeInstanceOf(DedupStoreError)
      expect(await store.inbox.stats()).toMatchObject({ dead: 5_000, pending: 10_000 })
      await db.client.query(`DROP TRIGGER chunk_failure ON ${table}_inbox`)
      expect(await store.inbox.retry('dead')).toBe(5_000)
      // A purge whose first chunk fails changed nothing: its error is the store's own.
      await db.client.query(`UPDATE ${table}_inbox SET state = 'dead', ended_at = now() - interval '1 hour'`)
      await db.client.query(`CREATE TRIGGER chunk_failure BEFORE DELETE ON ${table}_inbox FOR EACH ROW EXECUTE FUNCTION chunk_failure()`)
      const first = await store.inbox.purge({ olderThanMs: 60_000 }).catch((error: unknown) => error)
      expect(first).toBeInstanceOf(DedupStoreError)
      expect((first as Error).message).not.toContain('before this failure')
    } finally {
      await db.client.query(`DROP TRIGGER IF EXISTS chunk_failure ON ${table}_inbox`).catch(() => {})
      await store.close()
    }
  }, 60_000)
})

/** A store (queryTimeoutMs 2000) on table `table` through `pooler`, and the warnings it gives. */
function storeBehind(pooler: { port: number }, table: string): { store: PostgresDedupStore; warnings: string[] } {
  const warnings: string[] = []
  const url = new URL(db.server.url)
  url.port = String(pooler.port)
  const store = new PostgresDedupStore({ connectionString: url.href, table, queryTimeoutMs: 2_000, warn: (m) => warnings.push(m) })
  return { store, warnings }
}

/**
 * A stand-in for PgBouncer in front of `port` with its default `ignore_startup_parameters`: a
 * startup packet that carries `statement_timeout` gets the FATAL PgBouncer 1.18 sends (08P01
 * "unsupported startup parameter: statement_timeout", checked against it by hand), any other
 * connection is passed through to the server.
 */
async function refusingPooler(
  port: number,
  { refusing = true } = {},
): Promise<{ port: number; refused: number; passed: number; refuse(): void; dropAll(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const counts = { refused: 0, passed: 0 }
  let refuses = refusing
  const pooler: Server = createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    client.once('data', (startup) => {
      if (refuses && startup.includes('statement_timeout\0')) {
        counts.refused++
        client.end(errorResponse('FATAL', '08P01', 'unsupported startup parameter: statement_timeout'))
        return
      }
      counts.passed++
      const upstream = tcpConnect(port, '127.0.0.1')
      sockets.add(upstream)
      upstream.on('close', () => sockets.delete(upstream))
      upstream.write(startup)
      client.pipe(upstream).pipe(client)
      upstream.on('error', () => client.destroy())
      client.on('error', () => upstream.destroy())
    })
  })
  await new Promise<void>((resolve) => pooler.listen(0, '127.0.0.1', resolve))
  const address = pooler.address()
  if (typeof address !== 'object' || address === null) throw new Error('no port')
  return {
    port: address.port,
    get refused() {
      return counts.refused
    },
    get passed() {
      return counts.passed
    },
    refuse: () => {
      refuses = true
    },
    dropAll: () => {
      for (const socket of sockets) socket.destroy()
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        pooler.close(() => resolve())
      }),
  }
}

/** A protocol ErrorResponse: 'E', its length, then the fields S, V, C and M, each a C string, and a 0. */
function errorResponse(severity: string, code: string, message: string): Buffer {
  const fields = Buffer.concat(
    [
      ['S', severity],
      ['V', severity],
      ['C', code],
      ['M', message],
    ].map(([field, value]) => Buffer.from(`${field}${value}\0`)),
  )
  const body = Buffer.concat([fields, Buffer.from([0])])
  const header = Buffer.alloc(5)
  header.write('E', 0)
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}
