/**
 * The SQLite store's statements find their rows through an index, however much the file holds:
 * every statement the store and its inbox prepare is explained (EXPLAIN QUERY PLAN) on a file
 * holding done entries, and none may read a table or an index range whole, except the few named
 * below that are not on the way of an event (operator reads and the one-time setup). This caught
 * the inbox's purge of done entries reading every done entry at every step (it went through the
 * `(state, next_at)` index, not the one on `until` of done entries), which made a drained event
 * cost 361 µs of CPU at 100,000 retained entries instead of 82 µs.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInboxWorker, createReceiver } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-plans-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Statements allowed to read a whole table or state: setup, and what an operator asks for (list, dead entries). */
const ALLOWED = [
  /sqlite_master/,
  /pragma_table_info/,
  // `inbox list`: the console's and CLI's page of entries, ordered by when they were recorded.
  /^SELECT key, type, payload, timestamp, order_key, created_at_ms, CASE/,
  // Dead entries (retry all, purge of dead ones, their order keys): an operator's command.
  /state = 'dead'/,
  // Running entries (a take's look for lapsed leases, an email's running one): at most the workers' concurrency.
  /^SELECT DISTINCT order_key FROM \w+ WHERE state = 'running' AND until <= \? AND order_key IS NOT NULL$/,
  /^UPDATE \w+ SET state = 'pending', token = NULL, next_at = \?, ready = \(order_key IS NULL\) WHERE state = 'running' AND until <= \?$/,
  /^UPDATE \w+ SET ready = 1 WHERE state = 'pending' AND key = \( SELECT o\.key FROM .* AND NOT EXISTS \(SELECT 1 FROM \w+ r WHERE r\.order_key = :ok AND r\.state = 'running'\)$/,
  // Counts by state (stats) read pending, running and dead entries, never done ones.
  /count\(\*\) AS n/,
  // The list of sealed generations of done records: at most 400 rows, read when the schema changed.
  /FROM \w+_gen\b/,
  // The current table of done records, counted every 5,000 records written (at most generationRecords
  // rows, 50,000), and read whole (its expired records deleted first) when it is sealed as a generation.
  /^SELECT (count\(\*\)|key|max\(expires_at\)) FROM \w+_now$/,
  /^DELETE FROM \w+_now WHERE expires_at <= \?$/,
]

describe('SqliteDedupStore query plans', () => {
  it('reads no table or state whole in any statement of the event path, with done entries retained', async () => {
    const sources = new Set<string>()
    const prepare = Database.prototype.prepare
    Database.prototype.prepare = function (this: Database.Database, source: string) {
      sources.add(source)
      return prepare.call(this, source)
    } as typeof prepare
    const path = join(dir, 'plans.db')
    try {
      const store = new SqliteDedupStore({ path })
      const receiver = createReceiver({ secret: TEST_SECRET, store, logger: false, mode: 'inbox', inbox: { worker: false } })
      for (let i = 0; i < 50; i++) {
        const { headers, body } = await createSignedDelivery({ type: 'email.bounced' })
        expect((await receiver.receive({ headers, body })).status).toBe(200)
      }
      await createInboxWorker({ store, handlers: {} }).drain()
      await store.close()
    } finally {
      Database.prototype.prepare = prepare
    }
    expect(sources.size).toBeGreaterThan(20)
    const db = new Database(path, { readonly: true })
    try {
      const whole: string[] = []
      for (const source of sources) {
        const sql = source.replace(/\s+/g, ' ').trim()
        if (!/^(SELECT|UPDATE|DELETE|INSERT|WITH)/i.test(sql) || ALLOWED.some((allowed) => allowed.test(sql))) continue
        const names = [...new Set([...sql.matchAll(/[:@$]([A-Za-z_]\w*)/g)].map((m) => m[1] as string))]
        const params =
          names.length > 0 ? [Object.fromEntries(names.map((name) => [name, 0]))] : Array((sql.match(/\?/g) ?? []).length).fill(0)
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((row) => row.detail)
        // A SCAN reads a table or index whole; `(state=?)` alone reads every entry of a state (all done ones).
        if (plan.some((step) => /^SCAN (?!CONSTANT)/.test(step) || /\(state=\?\)$/.test(step)))
          whole.push(`${sql.slice(0, 120)} → ${plan.join(' | ')}`)
      }
      expect(whole).toEqual([])
    } finally {
      db.close()
    }
  })
})
