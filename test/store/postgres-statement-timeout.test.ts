/**
 * The PostgreSQL store's own pool has the server end a statement a tenth before `queryTimeoutMs`
 * (`statement_timeout`). Before, a claim stuck behind a lock lost its connection at `queryTimeoutMs`
 * and then committed on the server once the lock went: a lease nobody held, and the event's
 * retries met 409 until it ran out (a review's repro: a `LOCK TABLE … IN SHARE MODE` held 1.5 s,
 * `queryTimeoutMs` 1000). Now PostgreSQL rolls it back, the call fails with `timeout` saying so,
 * and the key is free the moment the lock goes.
 */
import { DedupStoreError } from '@email-webhooks/core'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serverStatementTimeoutMs } from '../../packages/core/src/store/postgres/deadline.js'
import { PostgresDedupStore } from '../../packages/core/src/store/postgres/index.js'
import { type RunningServer, startPostgres } from '../services/servers.js'

const OPTIONS = { leaseMs: 30_000, retentionMs: 3_600_000 }
let server: RunningServer
let admin: pg.Client

beforeAll(async () => {
  server = await startPostgres()
  admin = new pg.Client({ connectionString: server.url })
  await admin.connect()
}, 120_000)
afterAll(async () => {
  await admin?.end()
  await server?.stop()
})

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
    const store = new PostgresDedupStore({ connectionString: server.url, table, queryTimeoutMs: 2_000 })
    try {
      // The tables first (the store makes them on its first call).
      const first = await store.claim('an-earlier-event', OPTIONS)
      expect(first.status).toBe('acquired')
      // Another session holds a lock that every INSERT and UPDATE of the table waits for, 2.5 s:
      // past the server's 1.8 s and the store's 2 s.
      await admin.query('BEGIN')
      await admin.query(`LOCK TABLE ${table} IN SHARE MODE`)
      const started = performance.now()
      const claimed = store.claim('the-event', OPTIONS).then(
        (result) => ({ result, error: undefined, at: performance.now() - started }),
        (error: unknown) => ({ result: undefined, error, at: performance.now() - started }),
      )
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      await admin.query('COMMIT')
      const outcome = await claimed
      expect(outcome.result).toBeUndefined()
      expect(outcome.error).toBeInstanceOf(DedupStoreError)
      const error = outcome.error as DedupStoreError
      expect(error.code).toBe('timeout')
      // The server's answer at 1.8 s, before the store's own deadline (which destroys the connection).
      expect(error.message).toContain('statement_timeout')
      expect(error.message).toContain('kept nothing it would have written')
      expect(outcome.at).toBeGreaterThanOrEqual(1_780)
      // Nothing was left behind: the event's retry takes it at once (before: in flight for the lease's 30 s).
      const retried = await store.claim('the-event', OPTIONS)
      expect(retried.status).toBe('acquired')
      const rows = await admin.query(`SELECT count(*)::int AS n FROM ${table} WHERE key = 'the-event'`)
      expect(rows.rows[0].n).toBe(1)
    } finally {
      await admin.query('ROLLBACK').catch(() => {})
      await store.close()
    }
  }, 30_000)

  it('leaves a pool you give with its own settings: no statement_timeout added', async () => {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 })
    const store = new PostgresDedupStore({ pool, table: 'statement_timeout_given', queryTimeoutMs: 1_000 })
    try {
      expect((await store.claim('an-event', OPTIONS)).status).toBe('acquired')
      const shown = await pool.query('SHOW statement_timeout')
      expect(shown.rows[0].statement_timeout).toBe('0')
    } finally {
      await store.close()
      await pool.end()
    }
  })
})
