/**
 * The console's reads on a PostgreSQL store that holds many records (issue 48): the overview counts
 * a chunk of keys at a time within the time budget the console gives it, answering "at least" with
 * a note when the budget runs out, and every console read goes out one statement at a time on one
 * connection of the pool (a page's statements used to go out together: six connections of ten, for
 * as long as the overview counted a week of records). The store comes from source, as its console
 * source is found through the registry of the same module.
 */
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { registeredConsoleSource } from '../../packages/core/src/console/registry.js'
import type { ConsoleSource } from '../../packages/core/src/console/source.js'
import { PostgresDedupStore } from '../../packages/core/src/store/postgres/index.js'
import { postgresWithClient } from '../services/servers.js'

const WEEK_MS = 7 * 24 * 3_600_000
const OPTIONS = { leaseMs: 60_000, retentionMs: WEEK_MS }
/** A PostgreSQL of this file's own, and a client on it for the tests' own SQL. */
const db = postgresWithClient({ own: true })

function sourceOf(store: PostgresDedupStore): ConsoleSource {
  const factory = registeredConsoleSource(store)
  if (!factory) throw new Error('the store registered no console source')
  return factory()
}

describe('the PostgreSQL console', () => {
  it('counts the overview a chunk of keys at a time: "at least" with a note when out of time, all of them and the leases in flight within it', async () => {
    const store = new PostgresDedupStore({ connectionString: db.server.url, table: 'console_chunks' })
    try {
      // Three claims in flight and two expired records, all with keys after every done record's; the
      // done records expire an hour from now at the earliest, so none lapses while the test reads them
      // (with expiries from now on, one of 50,000 lapsed within a slow run's seconds: 19,999 counted).
      for (const name of ['zz-lease-1', 'zz-lease-2', 'zz-lease-3']) {
        expect((await store.claim(`default:${name}`, OPTIONS)).status).toBe('acquired')
      }
      await db.client.query(`INSERT INTO console_chunks (key, done, token, attempt, expires_at)
        SELECT 'default:' || gen_random_uuid(), true, NULL, 1, now() + interval '1 hour' + random() * interval '7 days' FROM generate_series(1, 50000)`)
      await db.client.query(`INSERT INTO console_chunks (key, done, token, attempt, expires_at)
        VALUES ('default:zz-expired-1', true, NULL, 1, now() - interval '1 hour'), ('default:zz-expired-2', true, NULL, 1, now() - interval '1 day')`)
      const source = sourceOf(store)

      // No time: one chunk (20,000 keys, all done records), then the count answers what it read.
      const partly = await source.overview(Date.now(), WEEK_MS, 0)
      // (Autovacuum may have analyzed the table already: then "about" follows, as checked below.)
      expect(partly.figures[0]?.label).toBe('Events remembered as done')
      expect(partly.figures[0]?.value).toMatch(/^at least 20,000( \(about [\d,]+\))?$/)
      expect(partly.figures[1]).toMatchObject({ label: 'Claims in flight', value: 'at least 0' })
      expect(partly.recordedByHour?.reduce((sum, hour) => sum + hour.count, 0)).toBe(20_000)
      expect(partly.notes[0]).toMatch(/^Counting stops after [\d.]+ s, so that the page answers/)
      // Once PostgreSQL has an estimate of the table (a table never analyzed has none), the count also
      // says about how many: the share of done records among the rows read, times the estimate.
      await db.client.query('ANALYZE console_chunks')
      const estimated = await source.overview(Date.now(), WEEK_MS, 0)
      const about = /^at least 20,000 \(about ([\d,]+)\)$/.exec(String(estimated.figures[0]?.value))
      expect(about, String(estimated.figures[0]?.value)).not.toBeNull()
      // 20,000 of 20,000 rows read were done records: about the estimate of 50,005 rows, to three digits.
      expect(Number(about?.[1]?.replaceAll(',', ''))).toBeGreaterThan(40_000)
      expect(Number(about?.[1]?.replaceAll(',', ''))).toBeLessThan(60_000)
      expect(estimated.notes[1]).toMatch(
        /^"About": the share of records remembered as done among the 20,000 rows read, times PostgreSQL's estimate of console_chunks \([\d,]+ rows in pg_class\.reltuples/,
      )

      // A minute: every chunk, the expired records left out, the leases counted exactly.
      const whole = await source.overview(Date.now(), WEEK_MS, 60_000)
      expect(whole.figures[0]).toMatchObject({ value: 50_000 })
      expect(whole.figures[1]).toMatchObject({ value: 3 })
      expect(whole.recordedByHour?.reduce((sum, hour) => sum + hour.count, 0)).toBe(50_000)
      expect(whole.notes).toEqual([])
    } finally {
      await store.close()
    }
  })

  it("counts the inbox's done entries a chunk of keys at a time too, within its share of the budget", async () => {
    const store = new PostgresDedupStore({ connectionString: db.server.url, table: 'console_inbox' })
    try {
      expect(await store.inbox.stats()).toMatchObject({ pending: 0 })
      // 30,000 done entries remembered, one past its retention, one dead, one pending.
      await db.client.query(`INSERT INTO console_inbox_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at, ended_at, expires_at)
        SELECT 'default:' || gen_random_uuid(), 'email.sent', '{}', 1, 'done', 1, now(), now(), now(), now() + interval '1 hour' + random() * interval '7 days'
        FROM generate_series(1, 30000)`)
      await db.client.query(`INSERT INTO console_inbox_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at, ended_at, expires_at)
        VALUES ('default:expired', 'email.sent', '{}', 1, 'done', 1, now(), now(), now(), now() - interval '1 hour'),
          ('default:dead', 'email.sent', '{}', 1, 'dead', 3, now(), now(), now(), NULL),
          ('default:pending', 'email.sent', '{}', 1, 'pending', 0, now(), now(), NULL, NULL)`)
      const source = sourceOf(store)
      const inboxFigure = (facts: { figures: { label: string; value: unknown }[] }) =>
        facts.figures.find((figure) => figure.label === 'Inbox entries handled and remembered')?.value
      const partly = await source.overview(Date.now(), WEEK_MS, 0)
      expect(inboxFigure(partly)).toMatch(/^at least (19,99\d|20,000)$/)
      expect(partly.notes[0]).toMatch(/^Counting stops after [\d.]+ s, so that the page answers/)
      const whole = await source.overview(Date.now(), WEEK_MS, 60_000)
      expect(inboxFigure(whole)).toBe(30_000)
      expect(whole.notes).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('counts a record whose key is the empty string (the first chunk starts at it)', async () => {
    const store = new PostgresDedupStore({ connectionString: db.server.url, table: 'console_empty_key' })
    try {
      const claimed = await store.claim('', OPTIONS)
      if (claimed.status !== 'acquired') throw new Error('not acquired')
      await store.complete(claimed.claim, OPTIONS)
      const overview = await sourceOf(store).overview(Date.now(), WEEK_MS, 60_000)
      expect(overview.figures[0]).toMatchObject({ value: 1 })
    } finally {
      await store.close()
    }
  })

  it('reads one statement at a time, on one connection of the pool', async () => {
    const pool = new pg.Pool({ connectionString: db.server.url, max: 10 })
    // Each checkout of a connection (the store takes each through connect()) as it starts and ends,
    // and whether it ran a purge: the store's background purge starts on a claim a second after the
    // store was made (a loaded machine takes that long to make its tables), beside the console's reads.
    const steps: { id: number; out: boolean }[] = []
    const purges = new Set<number>()
    let checkouts = 0
    const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>
    ;(pool as unknown as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
      const client = await connect()
      const id = checkouts++
      steps.push({ id, out: true })
      const query = client.query.bind(client) as (...args: unknown[]) => unknown
      client.query = ((...args: unknown[]) => {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string })?.text
        if (text?.trimStart().startsWith('DELETE')) purges.add(id)
        return query(...args)
      }) as typeof client.query
      const release = client.release.bind(client)
      client.release = (error?: Error | boolean) => {
        steps.push({ id, out: false })
        client.query = query as typeof client.query
        client.release = release
        release(error)
      }
      return client
    }
    /** The most connections out at once from step `from` on, a purge's not counted. */
    const mostOut = (from: number): number => {
      let out = 0
      let most = 0
      for (const step of steps.slice(from)) {
        if (purges.has(step.id)) continue
        out += step.out ? 1 : -1
        most = Math.max(most, out)
      }
      return most
    }
    const store = new PostgresDedupStore({ pool, table: 'console_one_at_a_time' })
    try {
      const claimed = await store.claim('default:an-event', OPTIONS)
      if (claimed.status !== 'acquired') throw new Error('not acquired')
      await store.complete(claimed.claim, OPTIONS)
      // The inbox finds its table once, on its first call (a statement of its own): before measuring.
      await store.inbox.stats()
      const from = steps.length
      const source = sourceOf(store)
      // The overview's counts and sizes, an email's mark, facts and entries (several statements each),
      // and the inbox's counts and list, which the overview page and the CLI ask for beside them.
      const [overview, email, stats, listed] = await Promise.all([
        source.overview(Date.now(), WEEK_MS, 60_000),
        source.email('an-email', Date.now(), 10),
        store.inbox.stats(),
        store.inbox.list({ limit: 5 }),
      ])
      expect(overview.figures[0]).toMatchObject({ value: 1 })
      expect(email.entries).toEqual([])
      expect(stats).toMatchObject({ pending: 0, dead: 0 })
      expect(listed).toEqual([])
      expect(mostOut(from)).toBe(1)
    } finally {
      await store.close()
      await pool.end()
    }
  })
})
