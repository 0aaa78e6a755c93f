/**
 * The Redis inbox's `retry('dead')` goes a thousand dead entries a script call, each call atomic on
 * its own; one that fails after an earlier call changed entries says how many (store/chunked.ts), as
 * the PostgreSQL inbox's does (postgres-statement-timeout.test.ts). Against a real Redis 7, the
 * second call is made to fail by a dead entry whose hash is a string (WRONGTYPE inside the script).
 * Redis does not undo a script that fails partway: the entries the failing call reached before the
 * bad one are pending too, so the count is "at least"; none is lost, and a rerun once the cause is
 * gone retries the rest.
 */
import { DedupStoreError } from '@email-webhooks/core'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedRedis, type TestServer } from '../services/servers.js'

let redis: TestServer
let client: Redis
beforeAll(async () => {
  redis = await sharedRedis()
  client = new Redis(redis.url)
})
afterAll(async () => {
  await client?.quit()
  await redis?.stop()
})

describe('RedisDedupStore inbox: retry(dead) over more than one batch', () => {
  it('tells how many entries an earlier batch retried when a later one fails, and a rerun goes on with the rest', async () => {
    const prefix = `batches-${crypto.randomUUID()}:`
    const store = new RedisDedupStore({ url: redis.url, prefix })
    try {
      const count = 1_200
      const keys = Array.from({ length: count }, (_, i) => `e-${String(i).padStart(4, '0')}`)
      await Promise.all(
        keys.map((key) => store.inbox.enqueue({ key, type: 'email.sent', payload: '{}', timestamp: 0 }, { retentionMs: 3_600_000 })),
      )
      // Each entry taken and failed for good (dead), in 20 lanes.
      const lane = async () => {
        for (;;) {
          const lease = await store.inbox.take({ leaseMs: 60_000, ordered: false })
          if (!lease) return
          expect(await store.inbox.fail(lease, { error: 'boom', retryInMs: null })).toBe(true)
        }
      }
      await Promise.all(Array.from({ length: 20 }, lane))
      expect(await store.inbox.stats()).toMatchObject({ dead: count, pending: 0 })
      // A dead member after every real one (the second batch), whose entry is not a hash.
      const base = `${prefix}{inbox}:`
      await client.zadd(`${base}dead`, Date.now() + 3_600_000, 'bad')
      await client.set(`${base}entry:bad`, 'not a hash')

      const failed = await store.inbox.retry('dead').catch((error: unknown) => error)
      expect(failed).toBeInstanceOf(DedupStoreError)
      expect((failed as Error).message).toMatch(/WRONGTYPE/)
      expect((failed as Error).message).toContain(
        '(1000 entries were retried before this failure, each batch committed on its own: once the cause is mended, running it again goes on with the rest)',
      )
      expect((failed as { cause?: unknown }).cause).toBeInstanceOf(DedupStoreError)
      // The first batch is pending; the failing script's own changes before the bad member stay (Redis does not undo them).
      const after = await store.inbox.stats()
      expect(after.pending).toBeGreaterThanOrEqual(1_000)
      expect(after.pending + after.dead).toBe(count + 1)

      await client.zrem(`${base}dead`, 'bad')
      await client.del(`${base}entry:bad`)
      expect(await store.inbox.retry('dead')).toBe(count - after.pending)
      expect(await store.inbox.stats()).toMatchObject({ dead: 0, pending: count })
    } finally {
      await store.close()
    }
  }, 60_000)
})
