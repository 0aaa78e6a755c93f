import fs, { mkdtempSync, rmSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Claim } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'

// Group commit: completes asked for in one event-loop turn share one transaction. These tests
// pin down that sharing a commit never mixes up the answers of the events in it.

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-group-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

const item = (key: string) => ({ key, type: 'email.bounced', payload: '{}', timestamp: 1_700_000_000 })

type SyncCallback = (error: NodeJS.ErrnoException | null) => void
const realFdatasync = fs.fdatasync
/** Puts `sync` in place of fs.fdatasync (the store's WAL sync, an ES import of node:fs) until the returned function is called. */
function patchSync(sync: (fd: number, done: SyncCallback) => void): () => void {
  ;(fs as { fdatasync: unknown }).fdatasync = sync
  syncBuiltinESMExports()
  return () => {
    ;(fs as { fdatasync: unknown }).fdatasync = realFdatasync
    syncBuiltinESMExports()
  }
}

async function acquire(store: SqliteDedupStore, key: string): Promise<Claim> {
  const result = await store.claim(key, LONG)
  if (result.status !== 'acquired') throw new Error(`${key} was ${result.status}`)
  return result.claim
}

/** A store on `name` in the test folder, its path, and its inbox. */
function openWithInbox(name: string, durability: 'full' | 'normal') {
  const path = join(dir, `${name}-${durability}.db`)
  const store = new SqliteDedupStore({ path, durability })
  const inbox = store.inbox
  if (!inbox) throw new Error('the store has no inbox')
  return { path, store, inbox }
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
    const { store, inbox } = openWithInbox('inbox-batch', durability)
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
  it('answers an enqueue asked for just before close() once its entry is on disk, with a slow sync, and the entry is there after reopening', async () => {
    const { path, store, inbox } = openWithInbox('inbox-close', durability)
    // A slow disk: each WAL sync reaches the thread pool 20 ms late, so close() must wait for it.
    const restore = patchSync((fd, done) => setTimeout(() => realFdatasync(fd, done), 20))
    try {
      // Same turn: the enqueue waits for the batch, which close() commits.
      const queued = inbox.enqueue({ key: 'closing-entry', type: 'email.bounced', payload: '{}', timestamp: 1_700_000_000 }, LONG)
      const closed = store.close()
      expect(await queued).toBe('queued')
      await closed
    } finally {
      restore()
    }
    const reopened = new SqliteDedupStore({ path, durability })
    try {
      expect((await reopened.inbox?.get('closing-entry'))?.state).toBe('pending')
    } finally {
      await reopened.close()
    }
  })

  it('fails the whole batch with the real cause when a write ends the transaction (as SQLITE_FULL or an I/O error do), leaving nothing half done', async () => {
    const { path, store, inbox } = openWithInbox('inbox-rollback', durability)
    try {
      expect(await inbox.enqueue(item('x'), LONG)).toBe('queued')
      // Stands in for an error after which SQLite rolls the whole transaction back.
      const other = new Database(path)
      other.exec(`CREATE TRIGGER boom BEFORE INSERT ON email_webhook_dedup_inbox WHEN NEW.key = 'boom'
        BEGIN SELECT RAISE(ROLLBACK, 'whole transaction rolled back'); END`)
      other.close()
      const answers = await Promise.allSettled([
        store.claim('rolled-back-claim', LONG),
        inbox.take({ leaseMs: 60_000, ordered: false }),
        inbox.enqueue(item('boom'), LONG),
        inbox.enqueue(item('y'), LONG),
      ])
      for (const answer of answers) {
        expect(answer.status).toBe('rejected')
        expect(((answer as PromiseRejectedResult).reason as Error).message).toMatch(/whole transaction rolled back/)
      }
      // Nothing of the batch stayed: x was not taken (no attempt used, no lease nobody holds), y not recorded, the claim not taken.
      expect(await inbox.get('x')).toMatchObject({ state: 'pending', attempts: 0 })
      expect(await inbox.get('y')).toBeUndefined()
      expect(await store.lookup('rolled-back-claim')).toBe('absent')
    } finally {
      await store.close()
    }
  })

  it("undoes a write that fails midway, and only it: the entry it had inserted is gone, the batch's other writes commit", async () => {
    const { path, store, inbox } = openWithInbox('inbox-midway', durability)
    try {
      // An enqueue with an order key inserts its entry, then moves its email's head: that second statement fails.
      const other = new Database(path)
      other.exec(`CREATE TRIGGER midway BEFORE UPDATE ON email_webhook_dedup_inbox WHEN NEW.order_key = 'bad-email'
        BEGIN SELECT RAISE(ABORT, 'failed midway'); END`)
      other.close()
      const answers = await Promise.allSettled([
        inbox.enqueue({ ...item('half'), orderKey: 'bad-email', createdAtMs: 1 }, LONG),
        inbox.enqueue(item('whole'), LONG),
      ])
      expect(answers[0]).toMatchObject({
        status: 'rejected',
        reason: expect.objectContaining({ message: expect.stringMatching(/failed midway/) }),
      })
      expect(answers[1]).toEqual({ status: 'fulfilled', value: 'queued' })
      expect(await inbox.get('half')).toBeUndefined()
      expect(await inbox.get('whole')).toMatchObject({ state: 'pending' })
    } finally {
      await store.close()
    }
  })

  it('answers the enqueues and completes of one batch after one WAL sync', async () => {
    const { store, inbox } = openWithInbox('inbox-one-sync', durability)
    let syncs = 0
    try {
      const claim = await acquire(store, 'one-sync')
      const restore = patchSync((fd, done) => {
        syncs++
        realFdatasync(fd, done)
      })
      try {
        const answers = await Promise.all([inbox.enqueue(item('a'), LONG), inbox.enqueue(item('b'), LONG), store.complete(claim, LONG)])
        expect(answers).toEqual(['queued', 'queued', true])
      } finally {
        restore()
      }
      // durability 'full' syncs the WAL once for the batch; 'normal' never.
      expect(syncs).toBe(durability === 'full' ? 1 : 0)
    } finally {
      await store.close()
    }
  })
})
