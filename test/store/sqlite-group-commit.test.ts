import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Claim } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, describe, expect, it } from 'vitest'

// Group commit: completes asked for in one event-loop turn share one transaction. These tests
// pin down that sharing a commit never mixes up the answers of the events in it.

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-group-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

async function acquire(store: SqliteDedupStore, key: string): Promise<Claim> {
  const result = await store.claim(key, LONG)
  if (result.status !== 'acquired') throw new Error(`${key} was ${result.status}`)
  return result.claim
}

describe.each(['full', 'normal'] as const)('SqliteDedupStore group commit (%s)', (durability) => {
  it('answers each complete of one batch by its own token: right token true, stale token false, done key false', async () => {
    const store = new SqliteDedupStore({ path: join(dir, `batch-${durability}.db`), durability })
    try {
      const claims = await Promise.all(Array.from({ length: 50 }, (_, i) => acquire(store, `batch-${i}`)))
      const done = await acquire(store, 'already-done')
      expect(await store.complete(done, LONG)).toBe(true)
      // All in the same turn: one transaction.
      const answers = await Promise.all([
        ...claims.map((claim) => store.complete(claim, LONG)),
        store.complete({ ...(claims[0] as Claim), token: 'not-the-owner' }, LONG),
        store.complete(done, LONG),
      ])
      expect(answers.slice(0, 50)).toEqual(Array(50).fill(true))
      expect(answers.slice(50)).toEqual([false, false])
      for (let i = 0; i < 50; i++) expect(await store.claim(`batch-${i}`, LONG)).toEqual({ status: 'duplicate' })
    } finally {
      await store.close()
    }
  })

  it('commits completes still waiting for their batch when the store is closed', async () => {
    const path = join(dir, `close-${durability}.db`)
    const store = new SqliteDedupStore({ path, durability })
    const claim = await acquire(store, 'closing')
    const completed = store.complete(claim, LONG)
    await store.close()
    expect(await completed).toBe(true)
    await expect(store.complete(claim, LONG)).rejects.toThrow(/was closed/)
    const reopened = new SqliteDedupStore({ path, durability })
    try {
      expect(await reopened.claim('closing', LONG)).toEqual({ status: 'duplicate' })
    } finally {
      await reopened.close()
    }
  })

  it('keeps claims, releases and completes of interleaved events consistent under 200 concurrent events', async () => {
    const store = new SqliteDedupStore({ path: join(dir, `mixed-${durability}.db`), durability })
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const claim = await acquire(store, `mixed-${i}`)
          await new Promise((resolve) => setTimeout(resolve, i % 7))
          return i % 3 === 0 ? store.release(claim) : store.complete(claim, LONG)
        }),
      )
      expect(outcomes.every(Boolean)).toBe(true)
      for (let i = 0; i < 200; i++) {
        const again = await store.claim(`mixed-${i}`, LONG)
        expect(again.status).toBe(i % 3 === 0 ? 'acquired' : 'duplicate')
      }
    } finally {
      await store.close()
    }
  })
  it("commits the inbox's writes in the batch beside claims and completes; a failed write undoes only itself", async () => {
    const store = new SqliteDedupStore({ path: join(dir, `inbox-batch-${durability}.db`), durability })
    const inbox = store.inbox
    if (!inbox) throw new Error('the store has no inbox')
    const item = (key: string) => ({ key, type: 'email.bounced', payload: '{}', timestamp: 1_700_000_000 })
    try {
      const done = await acquire(store, 'inbox-batch-done')
      // All in the same turn: one transaction. The NULL type breaks a NOT NULL column inside it.
      const answers = await Promise.allSettled([
        inbox.enqueue(item('a'), LONG),
        inbox.enqueue({ ...item('broken'), type: null as unknown as string }, LONG),
        store.claim('inbox-batch-new', LONG),
        inbox.enqueue(item('b'), LONG),
        inbox.enqueue(item('a'), LONG),
        store.complete(done, LONG),
      ])
      expect(answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : (answer.reason as Error).name))).toEqual([
        'queued',
        'DedupStoreError',
        expect.objectContaining({ status: 'acquired' }),
        'queued',
        'duplicate',
        true,
      ])
      expect((answers[1] as PromiseRejectedResult).reason.message).toMatch(/NOT NULL/)
      expect(await inbox.get('broken')).toBeUndefined()
      // Takes and finishes of one turn share a commit too, and each gets its own entry.
      const [first, second, none] = await Promise.all([
        inbox.take({ leaseMs: 60_000, ordered: false }),
        inbox.take({ leaseMs: 60_000, ordered: false }),
        inbox.take({ leaseMs: 60_000, ordered: false }),
      ])
      expect([first?.key, second?.key].sort()).toEqual(['a', 'b'])
      expect(none).toBeUndefined()
      if (!first || !second) throw new Error('two entries were taken')
      expect(await Promise.all([inbox.finish(first, LONG), inbox.finish(second, LONG), inbox.finish(first, LONG)])).toEqual([
        true,
        true,
        false,
      ])
      expect(await inbox.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 })
      expect(await store.claim('inbox-batch-done', LONG)).toEqual({ status: 'duplicate' })
    } finally {
      await store.close()
    }
  })
  it('answers an enqueue asked for just before close() once its entry is on disk, and the entry is there after reopening', async () => {
    const path = join(dir, `inbox-close-${durability}.db`)
    const store = new SqliteDedupStore({ path, durability })
    const inbox = store.inbox
    if (!inbox) throw new Error('the store has no inbox')
    // Same turn: the enqueue waits for the batch, which close() commits.
    const queued = inbox.enqueue({ key: 'closing-entry', type: 'email.bounced', payload: '{}', timestamp: 1_700_000_000 }, LONG)
    const closed = store.close()
    expect(await queued).toBe('queued')
    await closed
    const reopened = new SqliteDedupStore({ path, durability })
    try {
      expect((await reopened.inbox?.get('closing-entry'))?.state).toBe('pending')
    } finally {
      await reopened.close()
    }
  })
})
