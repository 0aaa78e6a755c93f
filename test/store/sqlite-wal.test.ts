import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createTestClock, type TestClock } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'

// better-sqlite3 directly (a second connection) to count rows; typed here since the tests do not ship its types.
type Database = { prepare(sql: string): { get(): unknown }; close(): void }
const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string, options?: { readonly?: boolean }) => Database

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-wal-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const MiB = 1024 * 1024
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

/** A store on a new file `name` in the test folder with a test clock, closed after `run`. */
async function withClockedStore(
  name: string,
  run: (store: SqliteDedupStore, clock: TestClock, path: string) => Promise<void>,
): Promise<void> {
  const path = join(dir, name)
  const clock = createTestClock(1_800_000_000_000)
  const store = new SqliteDedupStore({ path, now: clock.now })
  try {
    await run(store, clock, path)
  } finally {
    await store.close()
  }
}

/** Claims `key`, releases the claim and returns its attempt number. */
async function claimAndRelease(store: SqliteDedupStore, key: string): Promise<number> {
  const claimed = await store.claim(key, LONG)
  if (claimed.status !== 'acquired') throw new Error(`${key} was ${claimed.status}`)
  expect(await store.release(claimed.claim)).toBe(true)
  return claimed.claim.attempt
}

function countRows(path: string, table = 'email_webhook_dedup_done'): number {
  const db = new Database(path, { readonly: true })
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
  } finally {
    db.close()
  }
}

describe('SqliteDedupStore on disk', () => {
  it('keeps the -wal file bounded (under 32 MiB) across 100,000 claim+complete pairs', async () => {
    const path = join(dir, 'wal.db')
    // durability 'normal' keeps this run quick (no fsync per commit); the WAL grows and is
    // checkpointed the same way under 'full'. The WAL starts over at about 4 MiB and the writing
    // connection's own checkpoint is a backstop at 12 MiB, but that backstop cannot run while the
    // thread's checkpoint does (one checkpointer at a time): when that checkpoint is slow (its sync
    // waiting on a busy disk, or its thread not scheduled), this writer, which syncs nothing, writes
    // past 12 MiB meanwhile (18.3 MiB in one
    // loaded CI run of every test file; 5.7–8 MiB here). Without checkpoints 100,000 events write
    // some 900 MiB (about 2.3 frames of 4 KiB each: bench/profile/wal-pages.mjs).
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
    expect(max).toBeLessThan(32 * MiB)
    expect(countRows(path)).toBe(100_000)
    // close() checkpoints and truncates the WAL.
    expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0)
  }, 120_000)

  it('purgeExpired() deletes every expired done record in one call and keeps live records and leases', async () => {
    await withClockedStore('purge.db', async (store, clock, path) => {
      // 3,000 completed keys retained 1 s, 30 completed keys retained 1 hour, 20 live leases of 1 minute.
      await Promise.all(
        Array.from({ length: 3_030 }, async (_, i) => {
          const result = await store.claim(`purge-${i}`, LONG)
          if (result.status !== 'acquired') throw new Error(`purge-${i} was ${result.status}`)
          await store.complete(result.claim, { retentionMs: i < 3_000 ? 1_000 : 3_600_000 })
        }),
      )
      for (let i = 0; i < 20; i++) expect((await store.claim(`live-${i}`, LONG)).status).toBe('acquired')
      expect(countRows(path)).toBe(3_030)
      expect(countRows(path, 'email_webhook_dedup_lease')).toBe(20)

      expect(store.purgeExpired()).toBe(0)
      clock.advance(2_000)
      expect(store.purgeExpired()).toBe(3_000)
      expect(store.purgeExpired()).toBe(0)
      expect(countRows(path)).toBe(30)
      expect(countRows(path, 'email_webhook_dedup_lease')).toBe(20)
      expect((await store.claim('purge-3029', LONG)).status).toBe('duplicate')
      expect((await store.claim('live-0', LONG)).status).toBe('in_flight')
      const forgotten = await store.claim('purge-0', LONG)
      expect(forgotten.status === 'acquired' && forgotten.claim.attempt).toBe(1)
    })
  })

  it('keeps a released lease (its attempt count) through purges for an hour, then deletes it', async () => {
    await withClockedStore('released.db', async (store, clock, path) => {
      expect(await claimAndRelease(store, 'released')).toBe(1)
      clock.advance(59 * 60_000)
      expect(store.purgeExpired()).toBe(0)
      expect(await claimAndRelease(store, 'released')).toBe(2)
      clock.advance(61 * 60_000)
      expect(store.purgeExpired()).toBe(1)
      expect(countRows(path, 'email_webhook_dedup_lease')).toBe(0)
      const third = await store.claim('released', LONG)
      expect(third.status === 'acquired' && third.claim.attempt).toBe(1)
    })
  })

  it('lets a released lease be claimed at once even when the clock stepped back since the release', async () => {
    await withClockedStore('clock-step.db', async (store, clock) => {
      expect(await claimAndRelease(store, 'stepped')).toBe(1)
      clock.advance(-10_000)
      expect(await store.lookup('stepped')).toBe('absent')
      const second = await store.claim('stepped', LONG)
      expect(second.status === 'acquired' && second.claim.attempt).toBe(2)
    })
  })

  it('keeps the table bounded over 20,000 events retained 1 s, one event per clock millisecond', async () => {
    // At most ~1,000 records are live at any time; without a purge that keeps up, the table grows
    // with every event (0.1 purged 500 rows per 1,000 claims and was left with 10,000 here).
    const path = join(dir, 'bounded.db')
    const clock = createTestClock(1_800_000_000_000)
    // durability 'normal' keeps this run quick; purge does not depend on it.
    const store = new SqliteDedupStore({ path, durability: 'normal', now: clock.now })
    const samples: number[] = []
    try {
      let next = 0
      const worker = async () => {
        while (next < 20_000) {
          const i = next++
          clock.advance(1)
          const result = await store.claim(`bounded-${i}`, LONG)
          if (result.status !== 'acquired') throw new Error(`bounded-${i} was ${result.status}`)
          await store.complete(result.claim, { retentionMs: 1_000 })
          if (i % 1_000 === 999) samples.push(countRows(path))
        }
      }
      await Promise.all(Array.from({ length: 20 }, worker))
    } finally {
      await store.close()
    }
    console.log(`rows every 1,000 events: ${samples.join(', ')}`)
    expect(samples).toHaveLength(20)
    // ~2x the live records, plus one purge step's worth of writes.
    expect(Math.max(...samples)).toBeLessThanOrEqual(2_600)
    expect(samples.at(-1)).toBeLessThanOrEqual(2_600)
  }, 60_000)
})
