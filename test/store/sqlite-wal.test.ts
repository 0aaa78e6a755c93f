import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createTestClock } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'

// better-sqlite3 directly (a second connection) to count rows; typed here since the tests do not ship its types.
type Database = { prepare(sql: string): { get(): unknown }; close(): void }
const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string, options?: { readonly?: boolean }) => Database

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-wal-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const MiB = 1024 * 1024
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

function countRows(path: string): number {
  const db = new Database(path, { readonly: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM email_webhook_dedup').get() as { n: number }).n
  } finally {
    db.close()
  }
}

describe('SqliteDedupStore on disk', () => {
  it('keeps the -wal file under 16 MiB across 100,000 claim+complete pairs', async () => {
    const path = join(dir, 'wal.db')
    // durability 'normal' keeps this run quick (no fsync per commit); the WAL grows and is
    // checkpointed the same way under 'full'.
    const store = new SqliteDedupStore({ path, durability: 'normal' })
    const sizes: number[] = []
    try {
      for (let i = 1; i <= 100_000; i++) {
        const result = await store.claim(`wal-${i}`, LONG)
        if (result.status !== 'acquired') throw new Error(`wal-${i} was ${result.status}`)
        if (!(await store.complete(result.claim, LONG))) throw new Error(`wal-${i} did not complete`)
        if (i % 5_000 === 0) sizes.push(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0)
      }
    } finally {
      await store.close()
    }
    const max = Math.max(...sizes)
    console.log(`-wal size over 100,000 events: max ${(max / MiB).toFixed(2)} MiB (samples every 5,000: ${sizes.length})`)
    expect(sizes).toHaveLength(20)
    expect(max).toBeGreaterThan(0)
    expect(max).toBeLessThan(16 * MiB)
    expect(countRows(path)).toBe(100_000)
    // close() checkpoints and truncates the WAL.
    expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0)
  }, 120_000)

  it('purges expired rows 500 at a time and keeps the live ones', async () => {
    const path = join(dir, 'purge.db')
    const clock = createTestClock(1_800_000_000_000)
    const store = new SqliteDedupStore({ path, now: clock.now })
    try {
      // 1,200 completed keys retained 1 s, 30 completed keys retained 1 hour, 20 live leases of 1 minute.
      for (let i = 0; i < 1_250; i++) {
        const result = await store.claim(`purge-${i}`, LONG)
        if (result.status !== 'acquired') throw new Error(`purge-${i} was ${result.status}`)
        await store.complete(result.claim, { retentionMs: i < 1_200 ? 1_000 : 3_600_000 })
      }
      for (let i = 0; i < 20; i++) expect((await store.claim(`live-${i}`, LONG)).status).toBe('acquired')
      expect(countRows(path)).toBe(1_270)

      expect(store.purgeExpired()).toBe(0)
      clock.advance(2_000)
      expect([store.purgeExpired(), store.purgeExpired(), store.purgeExpired(), store.purgeExpired()]).toEqual([500, 500, 200, 0])
      expect(countRows(path)).toBe(70)
      expect((await store.claim('purge-1249', LONG)).status).toBe('duplicate')
      expect((await store.claim('live-0', LONG)).status).toBe('in_flight')
      const forgotten = await store.claim('purge-0', LONG)
      expect(forgotten.status === 'acquired' && forgotten.claim.attempt).toBe(1)
    } finally {
      await store.close()
    }
  })

  it('purges expired rows by itself every 1,000 claims', async () => {
    const path = join(dir, 'auto-purge.db')
    const clock = createTestClock(1_800_000_000_000)
    const store = new SqliteDedupStore({ path, now: clock.now })
    try {
      for (let i = 0; i < 999; i++) {
        const result = await store.claim(`auto-${i}`, LONG)
        if (result.status !== 'acquired') throw new Error(`auto-${i} was ${result.status}`)
        await store.complete(result.claim, { retentionMs: 1_000 })
      }
      clock.advance(2_000)
      expect(countRows(path)).toBe(999)
      // The 1,000th claim runs one purge batch (500 rows) before claiming.
      expect((await store.claim('auto-last', LONG)).status).toBe('acquired')
      expect(countRows(path)).toBe(999 - 500 + 1)
    } finally {
      await store.close()
    }
  })
})
