/**
 * Two PostgreSQL stores opening at once on the same tables (a deploy starting several instances):
 * both find something to make, the second gets the store's advisory lock only after the first has
 * made it and begun writing. The second must then make nothing: `CREATE INDEX IF NOT EXISTS` and
 * `ALTER TABLE … ADD COLUMN IF NOT EXISTS` lock their table even when there is nothing to do, which
 * waited behind the first store's open transactions and, against a claim writing two of the tables,
 * deadlocked (CI, 2026-11-28: 40P01 failing two claims of the ordering suite behind PgBouncer).
 *
 * Each case stages that order by hand: a session holds the advisory lock while the store under test
 * finds the thing missing and waits for the lock; the thing is then made (as the first store would)
 * and another session holds a write lock on the table it concerns, open, as the first store's claim
 * would; then the advisory lock is let go. The store must finish its call while that write is still
 * open, say nothing, and keep its ordering (a store whose DDL failed goes on without it).
 */
import { PostgresDedupStore, postgresDedupTableSql } from '@email-webhooks/core/postgres'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { postgresWithClient } from '../services/servers.js'
import { scaled, until } from '../support/time.js'

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

interface Race {
  /** SQL that leaves the tables of `t` without the thing (run after they are made whole). */
  missing: (t: string) => string
  /** The store's call that finds it missing and makes it. */
  call: (store: PostgresDedupStore) => Promise<unknown>
  /** The table the first store's open write holds (ROW EXCLUSIVE, as an INSERT). */
  busy: (t: string) => string
}

const RACES: Record<string, Race> = {
  'the schema stamp (the upgrade at open)': {
    missing: (t) => `DROP TABLE ${t}_schema`,
    call: (store) => store.claim('default:after', LONG),
    busy: (t) => `${t}_order_lock`,
  },
  'the order tables': {
    missing: (t) => `DROP TABLE ${t}_order, ${t}_order_lock, ${t}_order_fact`,
    call: (store) => store.claim('default:after', LONG),
    busy: (t) => `${t}_order_lock`,
  },
  'the inbox table': {
    missing: (t) => `DROP TABLE ${t}_inbox`,
    call: (store) => store.inbox.stats(),
    busy: (t) => `${t}_inbox`,
  },
  "the inbox table's newer columns": {
    missing: (t) => `ALTER TABLE ${t}_inbox DROP COLUMN retried_attempts, DROP COLUMN retried_at`,
    call: (store) => store.inbox.stats(),
    busy: (t) => `${t}_inbox`,
  },
  "the index of the inbox's dead entries": {
    missing: (t) => `DROP INDEX ${t}_inbox_dead`,
    call: (store) => store.inbox.stats(),
    busy: (t) => `${t}_inbox`,
  },
}

describe('PostgreSQL: a store that waited for the advisory lock makes nothing another store made meanwhile', () => {
  const db = postgresWithClient()
  let n = 0

  for (const [what, race] of Object.entries(RACES)) {
    it(`${what}: finishes while the other store's write is open, and warns of nothing`, async () => {
      const t = `ddl_race_${++n}`
      await db.client.query(postgresDedupTableSql(t))
      await db.client.query(race.missing(t))
      const holder = new pg.Client({ connectionString: db.server.url })
      const writer = new pg.Client({ connectionString: db.server.url })
      const warnings: string[] = []
      const store = new PostgresDedupStore({ connectionString: db.server.url, table: t, warn: (message) => warnings.push(message) })
      await holder.connect()
      await writer.connect()
      try {
        await holder.query('BEGIN')
        await holder.query(`SELECT pg_advisory_xact_lock(hashtext('email-webhooks:${t}'))`)
        const call = race.call(store).then(
          () => 'finished',
          (error: unknown) => `failed: ${error instanceof Error ? error.message : String(error)}`,
        )
        const waiters = async () =>
          Number(
            (
              await db.client.query(
                `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = hashtext($1)::oid`,
                [`email-webhooks:${t}`],
              )
            ).rows[0].n,
          )
        await until(async () => (await waiters()) === 1, 'the store waits for the advisory lock', scaled(10_000))
        // The first store made the thing and writes the table, its transaction still open.
        await db.client.query(postgresDedupTableSql(t))
        await writer.query('BEGIN')
        await writer.query(`LOCK TABLE ${race.busy(t)} IN ROW EXCLUSIVE MODE`)
        await holder.query('COMMIT')
        // The call ends on its own: by finishing, or, were it waiting for the writer, by the store's
        // statement deadline (a failure) or the inbox index's short lock wait (a warning).
        const outcome = await call
        await writer.query('ROLLBACK')
        expect(outcome).toBe('finished')
        expect(warnings).toEqual([])
        // A store whose order tables' statement failed would go on without ordering, and say so here.
        expect(store.orderingIssue).toBeUndefined()
      } finally {
        await writer.end()
        await holder.end()
        await store.close()
      }
    }, 30_000)
  }
})
