/**
 * A claim whose answer never came back (a connection dropped after the server ran it, a reply past
 * the store's deadline) may have been taken all the same: before, its lease held the event for the
 * whole lease, with nobody to run it, and every retry met 409 in_flight (a PostgreSQL stop in the
 * fault suite left three such events blocked until their 30 s lease ended). The shared stores now
 * give such claims back with their own release, fenced by the claim's token: at once when a claim
 * of the key meets in_flight, and in the background once the server answers again. Against a real
 * PostgreSQL behind the fault proxy (test/services/fault-proxy.ts); Redis's case is in
 * redis-resend.test.ts, DynamoDB's in dynamodb-edges.test.ts.
 */
import { PostgresDedupStore, type PostgresPool } from '@email-webhooks/core/postgres'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresStatements } from '../../packages/core/src/store/postgres/schema.js'
import type { Claim } from '../../packages/core/src/store/types.js'
import { UnansweredClaims } from '../../packages/core/src/store/unanswered.js'
import { type FaultProxy, startFaultProxy } from '../services/fault-proxy.js'
import { sharedPostgres, type TestServer } from '../services/servers.js'
import { scaled, sleep, until } from '../support/time.js'

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

describe('PostgresDedupStore: a claim whose answer was lost', () => {
  let server: TestServer
  let proxy: FaultProxy
  let through: pg.Pool
  let direct: pg.Pool
  beforeAll(async () => {
    server = await sharedPostgres()
    proxy = await startFaultProxy(server.port)
    const url = new URL(server.url)
    url.port = String(proxy.port)
    through = new pg.Pool({ connectionString: url.href, max: 2 })
    through.on('error', () => {})
    direct = new pg.Pool({ connectionString: server.url, max: 4 })
  })
  afterAll(async () => {
    await through?.end()
    await direct?.end()
    await proxy?.close()
    await server?.stop()
  })

  /**
   * A store whose claims (only) go through the proxy, so that the reply lost is a claim's; every
   * statement is recorded in `sent`; `refuse`: claims fail as a refused connection does, unsent.
   */
  function storeOn(
    table: string,
    warnings: string[],
    sent: { text: string; values?: unknown[] }[] = [],
    refuse = false,
  ): PostgresDedupStore {
    const claims = new Set([postgresStatements(table).sql.claim, postgresStatements(table).order.claim])
    const pool: PostgresPool = {
      query: (text, values) => {
        sent.push({ text, values })
        if (refuse && claims.has(text)) {
          return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))
        }
        return (claims.has(text) ? through : direct).query(text, values)
      },
      end: () => Promise.resolve(),
    }
    return new PostgresDedupStore({ pool, table, warn: (line) => warnings.push(line) })
  }
  const heldBy = async (table: string, key: string) =>
    (await direct.query<{ token: string | null }>(`SELECT token FROM ${table} WHERE key = $1`, [key])).rows[0]?.token ?? null

  it('gives it back at once when the event is claimed again, instead of answering in_flight for the lease', async () => {
    const warnings: string[] = []
    const sent: { text: string; values?: unknown[] }[] = []
    const store = storeOn('unanswered_now', warnings, sent)
    try {
      expect((await store.claim(`default:${crypto.randomUUID()}`, LONG)).status).toBe('acquired')
      const key = `default:${crypto.randomUUID()}`
      proxy.loseNextReply()
      const lost = await store.claim(key, LONG).then(
        () => undefined,
        (error: { code?: string }) => error.code,
      )
      expect(lost).toBe('connection_failed')
      const again = await store.claim(key, LONG)
      // Attempt 2: the lost claim was the first (a release carries the count on).
      expect(again).toMatchObject({ status: 'acquired', claim: { attempt: 2 } })
      // Given back through the store's own release, fenced by the lost claim's token.
      const release = postgresStatements('unanswered_now').sql.release
      expect(sent.filter(({ text, values }) => text === release && values?.[0] === key)).toHaveLength(1)
      expect(warnings.filter((line) => line.includes('which the server had taken while its answer was lost'))).toHaveLength(1)
    } finally {
      await store.close()
    }
  })

  it('gives it back in the background once the server answers, with nothing asked', async () => {
    const warnings: string[] = []
    const store = storeOn('unanswered_later', warnings)
    try {
      expect((await store.claim(`default:${crypto.randomUUID()}`, LONG)).status).toBe('acquired')
      const key = `default:${crypto.randomUUID()}`
      proxy.loseNextReply()
      await expect(store.claim(key, LONG)).rejects.toMatchObject({ code: 'connection_failed' })
      // The server took it; within a few of the give-back's pauses (200 ms, then doubling) it is free again.
      await until(async () => (await heldBy('unanswered_later', key)) === null, 'the lost claim given back', 5_000, 50)
      expect(warnings.some((line) => line.includes('which the server had taken while its answer was lost'))).toBe(true)
      expect(await store.lookup(key)).toBe('absent')
    } finally {
      await store.close()
    }
  })

  it('gives back an ordered claim with the email it held: the email’s next event is not blocked for the lease', async () => {
    const warnings: string[] = []
    const store = storeOn('unanswered_order', warnings)
    const email = `default:email:${crypto.randomUUID()}`
    const order = (id: string, ms: number) => ({ key: email, mark: { createdAtMs: ms, eventId: id, type: 'email.queued' } })
    try {
      expect((await store.claim(`default:${crypto.randomUUID()}`, LONG)).status).toBe('acquired')
      proxy.loseNextReply()
      await expect(store.claim('default:first', { ...LONG, order: order('first', 1) })).rejects.toMatchObject({ code: 'connection_failed' })
      // Another event of the same email: held by the lost claim's order lock, given back at once.
      const next = await store.claim('default:second', { ...LONG, order: order('second', 2) })
      expect(next.status).toBe('acquired')
    } finally {
      await store.close()
    }
  })

  it('keeps nothing to give back for a claim that was never sent (a refused connection), and says nothing', async () => {
    const warnings: string[] = []
    const sent: { text: string; values?: unknown[] }[] = []
    const key = `default:${crypto.randomUUID()}`
    const refusing = storeOn('unanswered_none', warnings, sent, true)
    try {
      await expect(refusing.claim(key, LONG)).rejects.toMatchObject({ code: 'connection_failed' })
      // Nothing to wait for: a kept claim would be released 200 ms after the failure.
      await sleep(600)
      // No release of the key went out, in the background or otherwise.
      const { sql, order } = postgresStatements('unanswered_none')
      expect(sent.filter(({ text, values }) => values?.[0] === key && (text === sql.release || text === order.release))).toEqual([])
      expect(warnings).toEqual([])
    } finally {
      await refusing.close()
    }
    const store = storeOn('unanswered_none', warnings, sent)
    try {
      expect(await store.claim(key, LONG)).toMatchObject({ status: 'acquired', claim: { attempt: 1 } })
    } finally {
      await store.close()
    }
  })
})

describe('UnansweredClaims: the give-back asked by a claim', () => {
  const claim = (key: string, orderKey?: string): Claim =>
    orderKey ? { key, token: `t-${key}`, attempt: 0, orderKey } : { key, token: `t-${key}`, attempt: 0 }

  it('releases its own claim at once, not after a background round busy with other keys', async () => {
    const released: string[] = []
    const given: string[] = []
    const unanswered = new UnansweredClaims(
      async (c) => {
        if (c.key !== 'k') await sleep(1_000)
        released.push(c.key)
        return true
      },
      (c) => given.push(c.key),
    )
    try {
      for (const key of ['a', 'b', 'c', 'd', 'e']) unanswered.add(claim(key), 60_000)
      unanswered.add(claim('k'), 60_000)
      // The background round starts after 200 ms and spends a second on each of the five others.
      await sleep(300)
      const started = performance.now()
      expect(await unanswered.giveBack('k', undefined, started)).toBe(true)
      expect(performance.now() - started).toBeLessThan(scaled(900))
      expect(released).toContain('k')
      expect(given).toContain('k')
    } finally {
      unanswered.close()
    }
  })

  it('answers true for a claim the background gave back after the caller started, and false for one before', async () => {
    const unanswered = new UnansweredClaims(
      async () => true,
      () => {},
    )
    try {
      const before = performance.now()
      unanswered.add(claim('k', 'email'), 60_000)
      await sleep(500)
      // Given back by the background (its first pause is 200 ms): a claim that started before that may claim again.
      expect(await unanswered.giveBack('k', undefined, before)).toBe(true)
      expect(await unanswered.giveBack('other', 'email', before)).toBe(true)
      expect(await unanswered.giveBack('k', undefined, performance.now())).toBe(false)
    } finally {
      unanswered.close()
    }
  })

  it('tries a release that found nothing twice more, then lets it go; and stops at close()', async () => {
    let calls = 0
    const unanswered = new UnansweredClaims(
      async () => {
        calls++
        return false
      },
      () => {},
    )
    unanswered.add(claim('k'), 60_000)
    // Rounds at 200 ms, then 400 ms and 800 ms later; a fourth would come 1.6 s after the third.
    await until(() => calls >= 3, 'three releases', 10_000)
    await sleep(2_000)
    expect(calls).toBe(3)
    unanswered.add(claim('later'), 60_000)
    unanswered.close()
    await sleep(400)
    expect(calls).toBe(3)
  })
})
