/**
 * A store call has a deadline that really ends it: against real PostgreSQL 15 and Redis 7 behind a
 * proxy that goes silent (accepts, never answers, never resets: test/services/fault-proxy.ts), a
 * call fails with DedupStoreError `timeout` at the store's own deadline, the connection it hung on
 * is destroyed instead of going back to the pool, and once the line passes again every call
 * succeeds on fresh connections. Also a store on a pg.Pool of the app's, and a Redis reply that
 * only comes late (delay). Before these deadlines, such a call never settled, and every later call
 * queued behind the dead connection.
 */
import { DedupStoreError } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FaultProxy, startFaultProxy } from '../services/fault-proxy.js'
import { sharedPostgres, sharedRedis, type TestServer } from '../services/servers.js'
import { scaled, sleep } from '../support/time.js'

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

let postgres: TestServer
let redis: TestServer
let pgProxy: FaultProxy
let redisProxy: FaultProxy
beforeAll(async () => {
  ;[postgres, redis] = await Promise.all([sharedPostgres(), sharedRedis()])
  ;[pgProxy, redisProxy] = await Promise.all([startFaultProxy(postgres.port), startFaultProxy(redis.port)])
  // The tables are made here, straight and with the default deadline: making them is not what these
  // tests time, and on a loaded machine (CI's Node 24 run, beside the docs site's crawl) their DDL
  // through the proxy outlasted a 500 ms deadline in the warm-up claims.
  const direct = new PostgresDedupStore({ connectionString: postgres.url })
  try {
    await direct.claim(`silent:${crypto.randomUUID()}`, LONG)
  } finally {
    await direct.close()
  }
})
afterAll(async () => {
  await Promise.all([pgProxy?.close(), redisProxy?.close()])
  await Promise.all([postgres?.stop(), redis?.stop()])
})

const TIMEOUT_MS = 1_000

const throughProxy = (url: string, proxy: FaultProxy) => {
  const parsed = new URL(url)
  parsed.port = String(proxy.port)
  return parsed.href
}

/** The error a call failed with, and how long it took; or the value when it did not fail. */
async function timed(call: () => Promise<unknown>): Promise<{ ms: number; error: unknown; value: unknown }> {
  const started = performance.now()
  try {
    const value = await call()
    return { ms: performance.now() - started, error: undefined, value }
  } catch (error) {
    return { ms: performance.now() - started, error, value: undefined }
  }
}

/**
 * Once the line passes again: claims until one succeeds (a call already on its way when the line
 * came back may still end at its deadline), for at most `withinMs`; the time that took.
 */
async function recovered(store: { claim: PostgresDedupStore['claim'] }, withinMs: number): Promise<number> {
  const started = performance.now()
  for (;;) {
    const attempt = await timed(() => store.claim(`silent:${crypto.randomUUID()}`, LONG))
    if (attempt.error === undefined) return performance.now() - started
    if (performance.now() - started > withinMs) throw attempt.error
  }
}

/** Claims `count` fresh keys one after another; every answer. */
async function claims(store: { claim: PostgresDedupStore['claim'] }, count: number): Promise<string[]> {
  const statuses: string[] = []
  for (let i = 0; i < count; i++) statuses.push((await store.claim(`silent:${crypto.randomUUID()}`, LONG)).status)
  return statuses
}

describe.each([
  [
    'PostgresDedupStore (its own pool)',
    () => new PostgresDedupStore({ connectionString: throughProxy(postgres.url, pgProxy), queryTimeoutMs: TIMEOUT_MS }),
    () => pgProxy,
  ],
  [
    'PostgresDedupStore (a pg.Pool of the app’s)',
    () => {
      // As the store's documented options ask of a pool of yours: a connect that hangs must end too.
      const pool = new pg.Pool({
        connectionString: throughProxy(postgres.url, pgProxy),
        max: 4,
        connectionTimeoutMillis: 2_000,
        keepAlive: true,
      })
      pool.on('error', () => {})
      const store = new PostgresDedupStore({ pool, queryTimeoutMs: TIMEOUT_MS })
      const close = store.close.bind(store)
      store.close = async () => {
        await close()
        await pool.end()
      }
      return store
    },
    () => pgProxy,
  ],
  [
    'RedisDedupStore (its own client)',
    () => new RedisDedupStore({ url: throughProxy(redis.url, redisProxy), commandTimeoutMs: TIMEOUT_MS }),
    () => redisProxy,
  ],
] as const)('%s behind a connection that goes silent', (_name, open, proxyOf) => {
  it('fails a call with code timeout at its deadline, then, once the line passes again, answers every call on fresh connections', async () => {
    const proxy = proxyOf()
    const store = open()
    try {
      expect(await claims(store, 3)).toEqual(['acquired', 'acquired', 'acquired'])
      proxy.mode('blackhole')
      // Several at once, as a pool under load: each ends at its deadline, none waits for another.
      const hung = await Promise.all(Array.from({ length: 4 }, () => timed(() => store.claim(`silent:${crypto.randomUUID()}`, LONG))))
      for (const call of hung) {
        expect(call.error).toBeInstanceOf(DedupStoreError)
        expect(call.error).toMatchObject({ code: 'timeout' })
        expect((call.error as Error).message).toMatch(/did not answer/)
        // The deadline, not the lease nor the kernel's TCP timeouts (at most a second of slack for a loaded machine).
        expect(call.ms).toBeLessThan(TIMEOUT_MS + scaled(1_500))
      }
      proxy.mode('pass')
      // The connections that hung stay dead (the proxy never answers on them): calls now need fresh ones.
      expect(await recovered(store, 3 * TIMEOUT_MS)).toBeLessThan(3 * TIMEOUT_MS)
      const after = await timed(() => claims(store, 20))
      expect(after.error).toBeUndefined()
      expect(after.value).toEqual(Array.from({ length: 20 }, () => 'acquired'))
    } finally {
      proxy.mode('pass')
      await store.close()
    }
  }, 30_000)
})

/** A PostgresDedupStore on its own pool through the fault proxy; after `body` the line passes again and the store closes. */
async function withProxiedPostgres(queryTimeoutMs: number, body: (store: PostgresDedupStore) => Promise<void>): Promise<void> {
  const store = new PostgresDedupStore({ connectionString: throughProxy(postgres.url, pgProxy), queryTimeoutMs })
  try {
    await body(store)
  } finally {
    pgProxy.mode('pass')
    await store.close()
  }
}

describe('PostgresDedupStore (its own pool) jammed by a silent line', () => {
  it('callers beyond its connections give up at the connect wait and leave the pool’s queue; once the line passes, it answers within one statement’s deadline', async () => {
    // Connect wait 300 ms (half queryTimeoutMs), and the pool's own connect timeout queryTimeoutMs:
    // a connection opened while the line is silent hangs only that long, not pg's 5 s.
    await withProxiedPostgres(600, async (store) => {
      expect(await claims(store, 3)).toEqual(['acquired', 'acquired', 'acquired'])
      pgProxy.mode('blackhole')
      // Waves of more callers than the pool has connections (10), as deliveries keep coming: the
      // later waves find connections destroyed at their deadline and open new ones, which hang too.
      const waves: Array<Promise<Array<Awaited<ReturnType<typeof timed>>>>> = []
      for (let wave = 0; wave < 4; wave++) {
        waves.push(Promise.all(Array.from({ length: 25 }, () => timed(() => store.claim(`silent:${crypto.randomUUID()}`, LONG)))))
        await sleep(400)
      }
      const calls = (await Promise.all(waves)).flat()
      pgProxy.mode('pass')
      const back = await recovered(store, 10_000)
      // A connection opened in the silence hangs at most a statement's deadline, so the pool is free
      // again soon after the line passes (pg's 5 s connect timeout kept it jammed for 3.2 s).
      expect(back).toBeLessThan(scaled(1_500))
      const connectStep = calls.filter((c) => /no free connection/.test(String((c.error as Error | undefined)?.message)))
      for (const call of calls) expect(call.error).toMatchObject({ code: 'timeout' })
      // Most waited for a connection and were never sent.
      expect(connectStep.length).toBeGreaterThan(calls.length / 2)
      for (const call of connectStep) expect(call.ms).toBeLessThan(300 + scaled(1_000))
      expect(await claims(store, 10)).toEqual(Array.from({ length: 10 }, () => 'acquired'))
    })
  }, 30_000)
})

describe('PostgresDedupStore (its own pool) on a line where opening a connection is slow', () => {
  it('opens connections that take longer than the connect wait (but within queryTimeoutMs), and answers on them', async () => {
    // 200 ms each way: a statement takes 400 ms, opening a connection (startup, SCRAM: three round
    // trips) about 1,200 ms, more than the 1,000 ms connect wait of queryTimeoutMs 2000 and less
    // than the pool's connect timeout (queryTimeoutMs). The first calls give up waiting; the
    // connections they started still open and serve the calls after them.
    await withProxiedPostgres(2_000, async (store) => {
      pgProxy.mode('delay', { delayMs: 200 })
      // Calls one after another until one answers (a connection opened), at most 12 of them; with
      // the pool's connect timeout at the connect wait, every connection was torn down before it
      // opened and every call failed (8 of 8, a first version of this change).
      const failed: string[] = []
      for (let i = 0; i < 12; i++) {
        const call = await timed(() => store.lookup(`silent:${crypto.randomUUID()}`))
        if (call.error === undefined) break
        failed.push((call.error as { code?: string }).code ?? String(call.error))
      }
      expect(failed.length).toBeLessThan(12)
      // Once open, the connections serve every call.
      for (let i = 0; i < 4; i++) expect(await store.lookup(`silent:${crypto.randomUUID()}`)).toBe('absent')
    })
  }, 60_000)
})

describe('PostgresDedupStore (its own pool) under a burst of claims on a slow line', () => {
  it('keeps connections for the records of handled events: a complete sent behind 40 waiting claims answers before most of them', async () => {
    await withProxiedPostgres(30_000, async (store) => {
      // A claim to complete later, and the pool's ten connections open (ten reads at once on the
      // slow line), so that no call below waits for a new connection.
      const held = await store.claim(`silent:${crypto.randomUUID()}`, LONG)
      if (held.status !== 'acquired') throw new Error(`claim: ${held.status}`)
      pgProxy.mode('delay', { delayMs: 100 })
      await Promise.all(Array.from({ length: 10 }, () => store.lookup(`silent:${crypto.randomUUID()}`)))
      // A burst of new deliveries (as the sender's retries after an outage): more than the pool holds.
      let claimed = 0
      const burst = Array.from({ length: 40 }, () => store.claim(`silent:${crypto.randomUUID()}`, LONG).then(() => void claimed++))
      await sleep(10)
      expect(await store.complete(held.claim, LONG)).toBe(true)
      const claimedBefore = claimed
      await Promise.all(burst)
      // In the pool's order the complete would wait for 30 claims or more; claims hold 8 of its 10 connections.
      expect(claimedBefore).toBeLessThan(20)
    })
  }, 60_000)
})

describe('RedisDedupStore behind a slow line', () => {
  it('answers a reply that comes later than usual but within commandTimeoutMs, and times out one that comes later', async () => {
    const store = new RedisDedupStore({ url: throughProxy(redis.url, redisProxy), commandTimeoutMs: 1_000 })
    try {
      expect(await claims(store, 1)).toEqual(['acquired'])
      redisProxy.mode('delay', { delayMs: 150 })
      expect(await claims(store, 2)).toEqual(['acquired', 'acquired'])
      redisProxy.mode('delay', { delayMs: 1_500 })
      const late = await timed(() => store.claim(`silent:${crypto.randomUUID()}`, LONG))
      expect(late.error).toMatchObject({ code: 'timeout' })
      redisProxy.mode('pass')
      await recovered(store, 3_000)
      expect(await claims(store, 5)).toEqual(Array.from({ length: 5 }, () => 'acquired'))
    } finally {
      redisProxy.mode('pass')
      await store.close()
    }
  }, 30_000)
})
