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

  it('behind a pooler that refuses the startup parameter (PgBouncer by default), connects without it, says so once, and no call fails', async () => {
    const pooler = await refusingPooler(server.port)
    const warnings: string[] = []
    const url = new URL(server.url)
    url.port = String(pooler.port)
    const store = new PostgresDedupStore({
      connectionString: url.toString(),
      table: 'statement_timeout_pooler',
      queryTimeoutMs: 2_000,
      warn: (message) => warnings.push(message),
    })
    try {
      // Several first calls at once, each on a connection of its own that the pooler refuses.
      const results = await Promise.all(Array.from({ length: 4 }, (_, i) => store.claim(`event-${i}`, OPTIONS)))
      expect(results.map((result) => result.status)).toEqual(['acquired', 'acquired', 'acquired', 'acquired'])
      expect(await store.claim('event-4', OPTIONS)).toMatchObject({ status: 'acquired' })
      expect(pooler.refused).toBeGreaterThanOrEqual(1)
      expect(pooler.passed).toBeGreaterThanOrEqual(1)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('refused the startup parameter statement_timeout')
      expect(warnings[0]).toContain("ALTER ROLE <role> SET statement_timeout = '1800ms'")
      expect(warnings[0]).not.toContain(server.password)
    } finally {
      await store.close()
      await pooler.close()
    }
  })
})

/**
 * A stand-in for PgBouncer in front of `port` with its default `ignore_startup_parameters`: a
 * startup packet that carries `statement_timeout` gets the FATAL PgBouncer 1.18 sends (08P01
 * "unsupported startup parameter: statement_timeout", checked against it by hand), any other
 * connection is passed through to the server.
 */
async function refusingPooler(port: number): Promise<{ port: number; refused: number; passed: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const counts = { refused: 0, passed: 0 }
  const pooler: Server = createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    client.once('data', (startup) => {
      if (startup.includes('statement_timeout\0')) {
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
