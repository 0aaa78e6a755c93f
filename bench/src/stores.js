/**
 * Dedup stores: claim + complete per second for the memory store and SQLite (`full` and
 * `normal`) with 1, 10 and 50 events in flight at once. Keys are random UUIDs, as real
 * `webhook-id`s are.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { MemoryDedupStore } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'

export const STORE_CONCURRENCY = [1, 10, 50]
const OPTIONS = { leaseMs: 30_000, retentionMs: 7 * 24 * 3600_000 }

/** Claims and completes `events` fresh keys with `concurrency` in flight; returns events per second. */
export async function claimCompleteRate(store, { events, concurrency }) {
  let next = 0
  async function lane() {
    while (next < events) {
      next++
      const result = await store.claim(randomUUID(), OPTIONS)
      if (result.status !== 'acquired') throw new Error(`a fresh key was not acquired: ${result.status}`)
      if (!(await store.complete(result.claim, OPTIONS))) throw new Error('complete of a fresh claim returned false')
    }
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: concurrency }, lane))
  return events / ((performance.now() - start) / 1000)
}

export const STORE_KINDS = [
  { name: 'memory', open: () => new MemoryDedupStore() },
  { name: 'sqlite full', open: (dir) => new SqliteDedupStore({ path: join(dir, 'full.db'), durability: 'full' }) },
  { name: 'sqlite normal', open: (dir) => new SqliteDedupStore({ path: join(dir, 'normal.db'), durability: 'normal' }) },
]

/** Runs every store at every concurrency; the best of `rounds` rounds is reported (rounds interleaved). */
export async function runStoreBench({ events, rounds, kinds = STORE_KINDS }) {
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-'))
  const rows = []
  try {
    for (const concurrency of STORE_CONCURRENCY) {
      const stores = kinds.map((kind) => ({ kind, store: kind.open(dir), rates: [] }))
      for (const entry of stores) await claimCompleteRate(entry.store, { events: Math.min(events, 500), concurrency }) // warm-up
      for (let round = 0; round < rounds; round++) {
        for (const entry of stores) entry.rates.push(await claimCompleteRate(entry.store, { events, concurrency }))
      }
      for (const entry of stores) {
        await entry.store.close?.()
        rows.push({ store: entry.kind.name, concurrency, perSecond: Math.max(...entry.rates), rounds: entry.rates })
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}
