/**
 * An inbox table made by 0.1.0 keeps working: the SQLite and PostgreSQL stores add the columns it
 * lacks (what a retried entry went through; SQLite's `ready` marks, filled in once for the entries
 * already there) when they open it, and an ordered take, a failure and a retry then work on the
 * entries 0.1.0 left, a blocked email's later entries included. PostgreSQL's gets the index of its
 * dead entries when it is small; a large one is the operator's to index, and the store says how. The
 * 0.1.0 tables are made here from their SQL as that version shipped it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { InboxQueue } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres, type TestServer } from '../services/servers.js'

/** The part of a better-sqlite3 Database this test uses. */
interface RawDatabase {
  pragma(source: string): unknown
  exec(source: string): void
  prepare(source: string): { run(...params: unknown[]): unknown }
  close(): void
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => RawDatabase

const SQLITE_0_1 = (t: string) => `CREATE TABLE ${t} (
    key TEXT PRIMARY KEY NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL, timestamp INTEGER NOT NULL,
    order_key TEXT, created_at_ms INTEGER, state TEXT NOT NULL, attempts INTEGER NOT NULL,
    enqueued_at INTEGER NOT NULL, next_at INTEGER NOT NULL, token TEXT, until INTEGER NOT NULL,
    last_error TEXT, ended_at INTEGER
  );
  CREATE INDEX ${t}_due ON ${t} (state, next_at);
  CREATE INDEX ${t}_order ON ${t} (order_key, created_at_ms, key) WHERE order_key IS NOT NULL;
  CREATE INDEX ${t}_done ON ${t} (until) WHERE state = 'done';`

const POSTGRES_0_1 = (t: string) => `CREATE TABLE ${t} (
  key text COLLATE "C" PRIMARY KEY, type text NOT NULL, payload text NOT NULL, timestamp bigint NOT NULL,
  order_key text COLLATE "C", created_at_ms bigint, state text NOT NULL, attempts integer NOT NULL,
  enqueued_at timestamptz NOT NULL, next_attempt_at timestamptz NOT NULL, token text, last_error text,
  ended_at timestamptz, expires_at timestamptz
);
CREATE INDEX ${t}_due ON ${t} (next_attempt_at) WHERE state IN ('pending', 'running');
CREATE INDEX ${t}_order ON ${t} (order_key, created_at_ms, key) WHERE state IN ('pending', 'running');
CREATE INDEX ${t}_done ON ${t} (expires_at) WHERE state = 'done';`

/** What 0.1.0 left: email a's head waits an hour after a failure with two entries due behind it; email b's one entry is due; one entry is dead. */
const ROWS = [
  { key: 'default:a1', orderKey: 'default:email:a', createdAtMs: 1, state: 'pending', attempts: 1, inMs: 3_600_000 },
  { key: 'default:a2', orderKey: 'default:email:a', createdAtMs: 2, state: 'pending', attempts: 0, inMs: -1_000 },
  { key: 'default:a3', orderKey: 'default:email:a', createdAtMs: 3, state: 'pending', attempts: 0, inMs: -1_000 },
  { key: 'default:b1', orderKey: 'default:email:b', createdAtMs: 1, state: 'pending', attempts: 0, inMs: -1_000 },
  { key: 'default:d1', orderKey: null, createdAtMs: null, state: 'dead', attempts: 3, inMs: -1_000 },
] as const

/** The checks every upgraded store passes. */
async function expectWorking(inbox: InboxQueue): Promise<void> {
  const first = await inbox.take({ leaseMs: 60_000, ordered: true })
  expect(first?.key).toBe('default:b1')
  // Email a's later entries wait behind their head.
  expect(await inbox.take({ leaseMs: 60_000, ordered: true })).toBeUndefined()
  expect(await inbox.fail(first as NonNullable<typeof first>, { error: 'down', retryInMs: null })).toBe(true)
  expect(await inbox.retry('dead')).toBe(2)
  expect(await inbox.get('default:d1')).toMatchObject({ state: 'pending', attempts: 0, attemptsBeforeRetry: 3 })
  expect(await inbox.get('default:b1')).toMatchObject({ state: 'pending', attemptsBeforeRetry: 1, lastError: 'down' })
  const keys: string[] = []
  for (let i = 0; i < 3; i++) {
    const lease = await inbox.take({ leaseMs: 60_000, ordered: true })
    if (lease) keys.push(lease.key)
  }
  expect(keys.sort()).toEqual(['default:b1', 'default:d1'])
}

describe('an inbox table made by 0.1.0', () => {
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-inbox-upgrade-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('SQLite: the store adds its columns, marks what is ready once, and takes, fails and retries the old entries', async () => {
    const path = join(dir, 'v0.1.db')
    const db = new Database(path)
    db.pragma('journal_mode = WAL')
    db.exec(SQLITE_0_1('email_webhook_dedup_inbox'))
    const now = Date.now()
    const insert = db.prepare(
      `INSERT INTO email_webhook_dedup_inbox (key, type, payload, timestamp, order_key, created_at_ms, state, attempts, enqueued_at, next_at, until, ended_at)
       VALUES (?, 'email.bounced', '{}', 1, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    for (const r of ROWS)
      insert.run(r.key, r.orderKey, r.createdAtMs, r.state, r.attempts, now, now + r.inMs, now + 3_600_000, r.state === 'dead' ? now : null)
    db.close()
    const store = new SqliteDedupStore({ path })
    try {
      await expectWorking(store.inbox as InboxQueue)
    } finally {
      await store.close()
    }
  })

  describe('PostgreSQL', () => {
    let server: TestServer
    beforeAll(async () => {
      server = await sharedPostgres()
    })
    afterAll(async () => {
      await server?.stop()
    })

    it('the store adds its columns and takes, fails and retries the old entries', async () => {
      const client = new pg.Client({ connectionString: server.url })
      await client.connect()
      try {
        await client.query(POSTGRES_0_1('email_webhook_dedup_inbox'))
        for (const r of ROWS) {
          await client.query(
            `INSERT INTO email_webhook_dedup_inbox (key, type, payload, timestamp, order_key, created_at_ms, state, attempts, enqueued_at, next_attempt_at, ended_at)
             VALUES ($1, 'email.bounced', '{}', 1, $2, $3, $4, $5, now(), now() + $6 * interval '1 millisecond', CASE WHEN $4 = 'dead' THEN now() END)`,
            [r.key, r.orderKey, r.createdAtMs, r.state, r.attempts, r.inMs],
          )
        }
      } finally {
        await client.end()
      }
      const warnings: string[] = []
      const store = new PostgresDedupStore({ connectionString: server.url, warn: (line) => warnings.push(line) })
      try {
        await expectWorking(store.inbox)
        // A small table gets the dead entries' index (stats() counts through it) with no word.
        expect(await indexOf(server, 'email_webhook_dedup_inbox_dead')).toBe(
          "CREATE INDEX email_webhook_dedup_inbox_dead ON public.email_webhook_dedup_inbox USING btree (ended_at) WHERE (state = 'dead'::text)",
        )
        expect(warnings).toEqual([])
      } finally {
        await store.close()
      }
    })

    it('a large one is not indexed by the store, which says once how to index it without blocking writes; stats() stays right', async () => {
      const client = new pg.Client({ connectionString: server.url })
      await client.connect()
      try {
        await client.query(POSTGRES_0_1('inbox_big_inbox'))
        // Some 70 MiB: 36,000 done entries of 1,900-byte payloads (under the size PostgreSQL moves
        // out of the row), 40 dead, 30 pending.
        await client.query(
          `INSERT INTO inbox_big_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at, ended_at, expires_at)
           SELECT 'default:' || g, 'email.sent', repeat(md5(g::text), 59), 1,
             CASE WHEN g <= 40 THEN 'dead' WHEN g <= 70 THEN 'pending' ELSE 'done' END, 1, now(), now(), now(), now() + interval '7 days'
           FROM generate_series(1, 36000) g`,
        )
        expect(Number((await client.query(`SELECT pg_relation_size('inbox_big_inbox') AS n`)).rows[0].n)).toBeGreaterThan(64 * 1024 * 1024)
      } finally {
        await client.end()
      }
      // The first store makes the dedup table; the second, with createTable: false, finds it.
      for (const createTable of [true, false]) {
        const warnings: string[] = []
        const store = new PostgresDedupStore({
          connectionString: server.url,
          table: 'inbox_big',
          createTable,
          warn: (line) => warnings.push(line),
        })
        try {
          expect(await store.inbox.stats()).toMatchObject({ pending: 30, running: 0, dead: 40 })
          expect(await store.inbox.stats()).toMatchObject({ pending: 30, running: 0, dead: 40 })
          expect(await indexOf(server, 'inbox_big_inbox_dead')).toBeUndefined()
          const said = warnings.filter((line) => line.includes('inbox_big_inbox_dead'))
          expect(said).toHaveLength(1)
          expect(said[0]).toContain(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS inbox_big_inbox_dead ON inbox_big_inbox (ended_at) WHERE state = 'dead'",
          )
          expect(said[0]).toContain(createTable ? 'MiB the store does not build it itself' : 'createTable is false')
        } finally {
          await store.close()
        }
      }
      // The statement it gave builds the index.
      const said = `CREATE INDEX CONCURRENTLY IF NOT EXISTS inbox_big_inbox_dead ON inbox_big_inbox (ended_at) WHERE state = 'dead'`
      const admin = new pg.Client({ connectionString: server.url })
      await admin.connect()
      try {
        await admin.query(said)
      } finally {
        await admin.end()
      }
      expect(await indexOf(server, 'inbox_big_inbox_dead')).toContain("WHERE (state = 'dead'::text)")
      const warnings: string[] = []
      const store = new PostgresDedupStore({ connectionString: server.url, table: 'inbox_big', warn: (line) => warnings.push(line) })
      try {
        expect(await store.inbox.stats()).toMatchObject({ pending: 30, running: 0, dead: 40 })
        expect(warnings).toEqual([])
      } finally {
        await store.close()
      }
    })

    it('a new database gets the index with the tables, before any inbox use', async () => {
      const store = new PostgresDedupStore({ connectionString: server.url, table: 'inbox_fresh' })
      try {
        expect((await store.claim(crypto.randomUUID(), { leaseMs: 1_000, retentionMs: 60_000 })).status).toBe('acquired')
        expect(await indexOf(server, 'inbox_fresh_inbox_dead')).toContain("WHERE (state = 'dead'::text)")
      } finally {
        await store.close()
      }
    })

    it('an index a failed CONCURRENTLY build left invalid: said once, and stats() reads in one pass, right', async () => {
      const made = new PostgresDedupStore({ connectionString: server.url, table: 'inbox_invalid' })
      await made.inbox.stats()
      await made.close()
      const client = new pg.Client({ connectionString: server.url })
      await client.connect()
      try {
        await client.query(`INSERT INTO inbox_invalid_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at, ended_at)
          SELECT 'default:' || g, 'email.sent', '{}', 1, CASE WHEN g <= 3 THEN 'dead' WHEN g <= 5 THEN 'pending' ELSE 'done' END, 1, now(), now(), now()
          FROM generate_series(1, 100) g`)
        // What a cancelled CREATE INDEX CONCURRENTLY leaves (the test's role is a superuser).
        await client.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'inbox_invalid_inbox_dead'::regclass`)
      } finally {
        await client.end()
      }
      const warnings: string[] = []
      const sent: string[] = []
      const pool = new pg.Pool({ connectionString: server.url, max: 2 })
      const store = new PostgresDedupStore({
        pool: {
          query: (text, values) => {
            sent.push(text)
            return pool.query(text, values)
          },
          end: () => Promise.resolve(),
        },
        table: 'inbox_invalid',
        warn: (line) => warnings.push(line),
      })
      try {
        expect(await store.inbox.stats()).toMatchObject({ pending: 2, running: 0, dead: 3 })
        expect(await store.inbox.stats()).toMatchObject({ pending: 2, running: 0, dead: 3 })
        expect(warnings).toHaveLength(1)
        expect(warnings[0]).toContain('inbox_invalid_inbox_dead, is not valid')
        expect(warnings[0]).toContain('DROP INDEX CONCURRENTLY IF EXISTS inbox_invalid_inbox_dead')
        // Counted in one pass over the table, not through the invalid index's part.
        const counts = sent.filter((text) => text.includes('AS dead') && text.includes('inbox_invalid_inbox'))
        expect(counts).toHaveLength(2)
        for (const text of counts) expect(text).toContain("WHERE state IN ('pending', 'running', 'dead')")
      } finally {
        await store.close()
        await pool.end()
      }
    })

    it('its own build waits a moment for the table, not behind a long transaction, and says why it stopped', async () => {
      const made = new PostgresDedupStore({ connectionString: server.url, table: 'inbox_locked' })
      await made.inbox.stats()
      await made.close()
      const holder = new pg.Client({ connectionString: server.url })
      await holder.connect()
      try {
        await holder.query('DROP INDEX inbox_locked_inbox_dead')
        // A transaction that wrote to the inbox and stays open: the build needs the table's SHARE lock.
        await holder.query('BEGIN')
        await holder.query(`INSERT INTO inbox_locked_inbox (key, type, payload, timestamp, state, attempts, enqueued_at, next_attempt_at)
          VALUES ('default:held', 'email.sent', '{}', 1, 'pending', 0, now(), now())`)
        const warnings: string[] = []
        const store = new PostgresDedupStore({ connectionString: server.url, table: 'inbox_locked', warn: (line) => warnings.push(line) })
        const other = new PostgresDedupStore({ connectionString: server.url, table: 'inbox_locked' })
        try {
          await other.claim(crypto.randomUUID(), { leaseMs: 1_000, retentionMs: 60_000 })
          const started = performance.now()
          const counted = store.inbox.stats()
          // An enqueue of another store meanwhile is not queued behind a build that waits.
          const item = { key: 'default:meanwhile', type: 'email.sent', payload: '{}', timestamp: 1 }
          expect(await other.inbox.enqueue(item, { retentionMs: 60_000 })).toBe('queued')
          // Counted while the enqueue above waited behind the failed build: it may or may not be in this count.
          expect(await counted).toMatchObject({ running: 0, dead: 0 })
          expect(await store.inbox.stats()).toMatchObject({ pending: 1, dead: 0 })
          expect(performance.now() - started).toBeLessThan(2_500)
          expect(warnings).toHaveLength(1)
          expect(warnings[0]).toMatch(/Building it now did not finish in time \(the table was busy: .*lock timeout/)
          expect(await indexOf(server, 'inbox_locked_inbox_dead')).toBeUndefined()
        } finally {
          await store.close()
          await other.close()
        }
      } finally {
        await holder.query('ROLLBACK')
        await holder.end()
      }
    })
  })
})

/** The definition of index `name`, or undefined. */
async function indexOf(server: TestServer, name: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: server.url })
  await client.connect()
  try {
    return (await client.query<{ def: string }>('SELECT indexdef AS def FROM pg_indexes WHERE indexname = $1', [name])).rows[0]?.def
  } finally {
    await client.end()
  }
}
