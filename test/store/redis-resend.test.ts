/**
 * Every Redis script is safe to run twice. ioredis sends a command again on its next connection
 * when the reply was lost with the last one (`autoResendUnfulfilledCommands`, on by default, also on
 * the store's own client): a claim or an inbox take that ran on the server and whose reply never
 * came back runs a second time with the same token. Against a real Redis 7 behind a proxy that loses
 * one reply and drops its connection (test/services/fault-proxy.ts), the second run answers what
 * the first took: the claim is acquired (not in flight to itself for a whole lease), the take
 * returns the same entry with the same attempt (not a second entry, leaving the first running with
 * no holder), and a complete sent again answers false while `completedBy` tells that its claim
 * recorded the key (the receiver's recorder then counts it as recorded). And a claim whose reply
 * came past `commandTimeoutMs` (the store gave up on it; the server took it) is given back by the
 * store once the line is quick again (store/unanswered.ts): the retry is acquired, not in_flight for
 * the lease.
 */
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FaultProxy, startFaultProxy } from '../services/fault-proxy.js'
import { sharedRedis, type TestServer } from '../services/servers.js'
import { until } from '../support/time.js'

let redis: TestServer
let proxy: FaultProxy
beforeAll(async () => {
  redis = await sharedRedis()
  proxy = await startFaultProxy(redis.port)
})
afterAll(async () => {
  await proxy?.close()
  await redis?.stop()
})

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const orderOf = (email: string, id: string, ms: number) => ({ key: email, mark: { createdAtMs: ms, eventId: id, type: 'email.queued' } })

/** Runs each script once, so that the reply lost next is the script's own (not a NOSCRIPT that EVAL follows). */
async function warm(store: RedisDedupStore): Promise<void> {
  await store.claim(`resend:${crypto.randomUUID()}`, LONG)
  await store.claim(`resend:${crypto.randomUUID()}`, { ...LONG, order: orderOf(`resend:email:${crypto.randomUUID()}`, 'w', 1) })
  await store.inbox.take({ leaseMs: 1, ordered: false })
}

const stores = {
  'its own client (url)': () => {
    const url = new URL(redis.url)
    url.port = String(proxy.port)
    return { store: new RedisDedupStore({ url: url.href }), close: async () => {} }
  },
  'a client of the app’s (ioredis defaults)': () => {
    const db = Number(new URL(redis.url).pathname.slice(1) || 0)
    const client = new Redis({ host: '127.0.0.1', port: proxy.port, password: redis.password, db })
    client.on('error', () => {})
    return { store: new RedisDedupStore({ client }), close: () => client.quit().then(() => undefined) }
  },
}

describe.each(Object.entries(stores))('RedisDedupStore on %s, a reply lost with its connection', (_name, open) => {
  it('acquires a claim whose first run took the lease: the resent claim is the same claim, not in flight', async () => {
    const { store, close } = open()
    try {
      await warm(store)
      const key = `resend:${crypto.randomUUID()}`
      proxy.loseNextReply()
      const claimed = await store.claim(key, LONG)
      expect(claimed).toMatchObject({ status: 'acquired', claim: { attempt: 1 } })
      expect((await store.claim(key, LONG)).status).toBe('in_flight')
      if (claimed.status === 'acquired') expect(await store.complete(claimed.claim, LONG)).toBe(true)
    } finally {
      await store.close()
      await close()
    }
  })

  it('a complete whose reply was lost answers false when sent again, and completedBy says the claim recorded it', async () => {
    const { store, close } = open()
    try {
      await warm(store)
      const key = `resend:${crypto.randomUUID()}`
      // One complete first, so that the reply lost next is the complete script's own (not a NOSCRIPT).
      const first = await store.claim(`${key}:first`, LONG)
      if (first.status !== 'acquired') throw new Error(`not acquired: ${first.status}`)
      expect(await store.complete(first.claim, LONG)).toBe(true)
      const claimed = await store.claim(key, LONG)
      if (claimed.status !== 'acquired') throw new Error(`not acquired: ${claimed.status}`)
      proxy.loseNextReply()
      // The first run recorded the key; the resent one finds it done and answers 0.
      expect(await store.complete(claimed.claim, LONG)).toBe(false)
      expect(await store.completedBy(claimed.claim)).toBe(true)
      expect(await store.lookup(key)).toBe('done')
      // Not for a claim of the key that never was.
      expect(await store.completedBy({ ...claimed.claim, attempt: claimed.claim.attempt + 1 })).toBe(false)
    } finally {
      await store.close()
      await close()
    }
  })

  it('acquires an ordered claim the same way, holding its email', async () => {
    const { store, close } = open()
    try {
      await warm(store)
      const email = `resend:email:${crypto.randomUUID()}`
      const order = (id: string, ms: number) => orderOf(email, id, ms)
      proxy.loseNextReply()
      const claimed = await store.claim(`resend:${crypto.randomUUID()}`, { ...LONG, order: order('a', 1) })
      expect(claimed).toMatchObject({ status: 'acquired', claim: { attempt: 1, orderKey: email } })
      expect(await store.claim(`resend:${crypto.randomUUID()}`, { ...LONG, order: order('b', 2) })).toMatchObject({
        status: 'in_flight',
        reason: 'order',
      })
    } finally {
      await store.close()
      await close()
    }
  })

  it('takes an inbox entry once when the take is sent again: the same entry, attempt 1, and the next take gets the next one', async () => {
    const { store, close } = open()
    const inbox = store.inbox
    try {
      await warm(store)
      const keys = [`resend:${crypto.randomUUID()}`, `resend:${crypto.randomUUID()}`]
      for (const key of keys) await inbox.enqueue({ key, type: 'email.bounced', payload: '{}', timestamp: 1 }, LONG)
      // Other tests' entries may be due too: take until ours come, giving the others back.
      const taken: string[] = []
      for (let i = 0; i < 20 && taken.length < 2; i++) {
        if (i === 0) proxy.loseNextReply()
        const lease = await inbox.take({ leaseMs: 60_000, ordered: false })
        if (lease === undefined) break
        if (!keys.includes(lease.key)) continue
        expect(lease.attempt).toBe(1)
        taken.push(lease.key)
        expect((await inbox.get(lease.key))?.attempts).toBe(1)
      }
      expect(taken.sort()).toEqual([...keys].sort())
    } finally {
      await store.close()
      await close()
    }
  })
})

describe('RedisDedupStore: a claim whose answer came past its deadline', () => {
  it('gives it back once the server answers in time again: the retry is acquired, not in_flight for the lease', async () => {
    const url = new URL(redis.url)
    url.port = String(proxy.port)
    const warnings: string[] = []
    const store = new RedisDedupStore({ url: url.href, prefix: 'unanswered:', commandTimeoutMs: 300, warn: (line) => warnings.push(line) })
    try {
      expect((await store.claim(`default:${crypto.randomUUID()}`, LONG)).status).toBe('acquired')
      const key = `default:${crypto.randomUUID()}`
      proxy.mode('delay', { delayMs: 800 })
      await expect(store.claim(key, LONG)).rejects.toMatchObject({ code: 'timeout' })
      // The line is quick again: the store's next connection takes the claim (ioredis sends an
      // unanswered command again), then the store gives it back, in that order on one connection.
      proxy.mode('pass')
      await until(() => warnings.some((line) => line.includes('which the server had taken')), 'the claim given back', 5_000, 20)
      // A lookup may fail while the line recovers: not yet.
      await until(
        () =>
          store.lookup(key).then(
            (state) => state === 'absent',
            () => false,
          ),
        'the lost claim given back',
        5_000,
        50,
      )
      expect(await store.claim(key, LONG)).toMatchObject({ status: 'acquired', claim: { attempt: 2 } })
      expect(warnings.some((line) => line.includes('which the server had taken while its answer was lost'))).toBe(true)
    } finally {
      proxy.mode('pass')
      await store.close()
    }
  })
})
