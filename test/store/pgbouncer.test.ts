/**
 * The PostgreSQL store behind a real PgBouncer (Debian's 1.18), as many deployments run it:
 * transaction pooling and its defaults. Two things the store sends meet PgBouncer there: named
 * prepared statements (before 1.21 a statement prepared on one server connection is missing on the
 * next: the store goes on unnamed) and the startup parameter `statement_timeout` (refused unless it
 * is in `ignore_startup_parameters`: the store connects without it; when it is there, PgBouncer
 * drops it and the store says the limit is not in effect). Each is found on the first calls and
 * said once; nothing fails. The dedup, ordering and inbox conformance suites then pass
 * through it.
 */
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { inboxConformance } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres, startPgBouncer, type TestServer } from '../services/servers.js'
import { scaled } from '../support/time.js'
import { conformance, ordering } from './conformance-helpers.js'

let postgres: TestServer
let bouncer: TestServer
/** One that lets the startup parameter through by dropping it (`ignore_startup_parameters`). */
let ignoring: TestServer

beforeAll(async () => {
  postgres = await sharedPostgres()
  ;[bouncer, ignoring] = await Promise.all([
    startPgBouncer(postgres, { poolMode: 'transaction' }),
    startPgBouncer(postgres, { poolMode: 'transaction', ignoreStartupParameters: ['statement_timeout'] }),
  ])
}, 120_000)
afterAll(async () => {
  await Promise.all([bouncer?.stop(), ignoring?.stop()])
  await postgres?.stop()
})

const OPTIONS = { leaseMs: 30_000, retentionMs: 3_600_000 }
/** The suites' stores say what they changed through `warn`; the first test below checks what. */
const quiet = () => {}

describe('PostgresDedupStore behind PgBouncer (transaction pooling, its defaults)', () => {
  it('answers its first calls, sent at once, and says once each what it changed for the pooler', async () => {
    const warnings: string[] = []
    const store = new PostgresDedupStore({ connectionString: bouncer.url, table: 'pgbouncer_first', warn: (m) => warnings.push(m) })
    try {
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => store.claim(`event-${i}`, OPTIONS)))
      expect(results.map((result) => result.status)).toEqual(Array(8).fill('acquired'))
      for (const result of results) if (result.status === 'acquired') expect(await store.complete(result.claim, OPTIONS)).toBe(true)
      expect(await store.lookup('event-0')).toBe('done')
      expect((await store.claim('event-0', OPTIONS)).status).toBe('duplicate')
      const timeout = warnings.filter((w) => w.includes('refused the startup parameter statement_timeout'))
      expect(timeout).toHaveLength(1)
      expect(timeout[0]).toContain("ALTER ROLE <role> IN DATABASE <database> SET statement_timeout = '2700ms'")
      // Named statements: PgBouncer 1.18 loses them between server connections (some runs find
      // every call on one connection and never learn it); said at most once.
      expect(warnings.filter((w) => w.includes('refused a prepared statement')).length).toBeLessThanOrEqual(1)
      expect(warnings.length).toBe(timeout.length + warnings.filter((w) => w.includes('refused a prepared statement')).length)
      for (const warning of warnings) expect(warning).not.toContain(postgres.password)
    } finally {
      await store.close()
    }
  })

  it('with statement_timeout in its ignore_startup_parameters: answers, and says once that the statements run without the limit', async () => {
    const warnings: string[] = []
    const store = new PostgresDedupStore({ connectionString: ignoring.url, table: 'pgbouncer_ignoring', warn: (m) => warnings.push(m) })
    try {
      const results = await Promise.all(Array.from({ length: 4 }, (_, i) => store.claim(`event-${i}`, OPTIONS)))
      expect(results.map((result) => result.status)).toEqual(Array(4).fill('acquired'))
      const without = warnings.filter((w) => w.includes('run without a statement_timeout'))
      expect(without).toHaveLength(1)
      expect(without[0]).toContain('ignore_startup_parameters')
      expect(warnings.filter((w) => w.includes('refused the startup parameter'))).toEqual([])
    } finally {
      await store.close()
    }
  })
})

/**
 * The store's deadline is a margin here, not what the suites test: 200 concurrent claims of one key
 * wait for the pool's 10 connections through PgBouncer beside the suite's other cases, and on a
 * busy machine (a full run, 2026-11-28) one waited past the default connect wait (1.5 s, half of
 * queryTimeoutMs) and failed.
 */
const queryTimeoutMs = scaled(10_000)
conformance(
  'PostgresDedupStore behind PgBouncer (transaction pooling)',
  () => new PostgresDedupStore({ connectionString: bouncer.url, table: 'hooks_pgbouncer', warn: quiet, queryTimeoutMs }),
)
ordering(
  'PostgresDedupStore behind PgBouncer (transaction pooling)',
  () => new PostgresDedupStore({ connectionString: bouncer.url, table: 'hooks_pgbouncer', warn: quiet, queryTimeoutMs }),
)
inboxConformance(
  'PostgresDedupStore behind PgBouncer (transaction pooling, table "inbox_pgbouncer")',
  { describe, it: it.sequential },
  {
    createStore: () => new PostgresDedupStore({ connectionString: bouncer.url, table: 'inbox_pgbouncer', warn: quiet }),
    createPeerStore: () => new PostgresDedupStore({ connectionString: bouncer.url, table: 'inbox_pgbouncer', warn: quiet }),
    shortMs: scaled(300),
  },
)
