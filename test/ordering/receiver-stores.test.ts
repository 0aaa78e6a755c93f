/**
 * Ordering end to end over real HTTP (Express 5 on a listener) with the durable stores: the SQLite
 * default store (no `store` option, `EMAIL_WEBHOOKS_DB` in a temp folder), PostgreSQL 15 and
 * Redis 7 (see test/services/servers.ts). The mark outlives the receiver: a late older event sent to a new
 * receiver on a new store over the same database is still `stale`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DedupStore, EventOrder, WebhookEvent, WebhookOptions } from '@email-webhooks/core'
import { PostgresDedupStore, postgresDedupTableSql } from '@email-webhooks/core/postgres'
import { type RedisClient, RedisDedupStore } from '@email-webhooks/core/redis'
import { createEmailSequence, TEST_SECRET } from '@email-webhooks/core/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Delivery, express5Listen, type Target } from '../adapters/targets.js'
import { sharedPostgres, sharedRedis, type TestServer } from '../services/servers.js'

type Seen = { type: string; order: EventOrder }[]

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

async function receiverOn(options: WebhookOptions<{ order: EventOrder }>, seen: Seen): Promise<Target> {
  const record = (event: WebhookEvent, ctx: { order: EventOrder }) => void seen.push({ type: event.type, order: ctx.order })
  const handlers = { 'email.queued': record, 'email.deferred': record, 'email.submitted': record }
  return express5Listen.create(TEST_SECRET, handlers, { ordering: true, ...options })
}

/** Sends queued and submitted to one receiver, then the late deferred to a second one on a fresh store over the same database. */
async function lateEventAcrossRestart(makeOptions: () => WebhookOptions<{ order: EventOrder }>): Promise<Seen> {
  const seen: Seen = []
  const { deliveries } = await createEmailSequence({ types: ['email.queued', 'email.deferred', 'email.submitted'] })
  const [queued, deferred, submitted] = deliveries
  const first = await receiverOn(makeOptions(), seen)
  for (const delivery of [queued, submitted]) expect((await first.send(delivery as NonNullable<typeof queued>)).json).toEqual({ ok: true })
  await first.close()
  const second = await receiverOn({ ...makeOptions(), skipStale: ['email.deferred'] }, seen)
  try {
    const answer = await second.send(deferred as NonNullable<typeof deferred>)
    expect([answer.status, answer.json]).toEqual([200, { ok: true, skipped: 'stale' }])
    // Without skipStale the handler runs and sees it stale.
    const third = await receiverOn(makeOptions(), seen)
    const { deliveries: again } = await createEmailSequence({ types: ['email.queued', 'email.submitted'] })
    await third.send(again[1] as NonNullable<typeof queued>)
    await third.send(again[0] as NonNullable<typeof queued>)
    await third.close()
  } finally {
    await second.close()
  }
  return seen
}

const EXPECTED = [
  ['email.queued', 'first'],
  ['email.submitted', 'latest'],
  ['email.submitted', 'first'],
  ['email.queued', 'stale'],
]

describe('ordering with the SQLite default store over HTTP', () => {
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-ordering-'))
  const previous = process.env.EMAIL_WEBHOOKS_DB
  beforeAll(() => {
    process.env.EMAIL_WEBHOOKS_DB = join(dir, 'dedup.db')
  })
  afterAll(() => {
    if (previous === undefined) delete process.env.EMAIL_WEBHOOKS_DB
    else process.env.EMAIL_WEBHOOKS_DB = previous
    rmSync(dir, { recursive: true, force: true })
  })

  it('keeps the mark in the file: a late older event is stale, skipped when asked, and newestHandled names the newest', async () => {
    const seen = await lateEventAcrossRestart(() => ({}))
    expect(seen.map(({ type, order }) => [type, order.status])).toEqual(EXPECTED)
    expect(seen[3]?.order.newestHandled?.type).toBe('email.submitted')
  })
})

describe('ordering with PostgreSQL over HTTP', () => {
  let postgres: TestServer
  let pool: pg.Pool
  const stores: DedupStore[] = []
  beforeAll(async () => {
    postgres = await sharedPostgres()
    pool = new pg.Pool({ connectionString: postgres.url, max: 4 })
    // The server stops at the end of the file; an idle client's "terminating connection" is expected then.
    pool.on('error', () => {})
  })
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close?.()))
    await pool?.end()
    await postgres?.stop()
  })
  const storeOn = (table: string, createTable = true) => {
    const store = new PostgresDedupStore({ pool, table, createTable })
    stores.push(store)
    return store
  }

  it('keeps the mark in <table>_order: a late older event is stale, skipped when asked, across stores', async () => {
    const seen = await lateEventAcrossRestart(() => ({ store: storeOn('ordering_http') }))
    expect(seen.map(({ type, order }) => [type, order.status])).toEqual(EXPECTED)
    const marks = await pool.query('SELECT count(*)::int AS n FROM ordering_http_order')
    expect(marks.rows[0].n).toBe(2)
  })

  it('on a table from before ordering, with createTable: false, deduplicates, says once that ctx.order is unknown, and picks up the order tables once they exist', async () => {
    await pool.query(
      'CREATE TABLE legacy_hooks (key text PRIMARY KEY, done boolean NOT NULL, token text, attempt integer NOT NULL, expires_at timestamptz NOT NULL)',
    )
    const seen: Seen = []
    const warnings: string[] = []
    const store = storeOn('legacy_hooks', false)
    const logger = { warn: (line: string) => void warnings.push(line), error: () => {} }
    const target = await receiverOn({ store, logger }, seen)
    const { emailId, deliveries } = await createEmailSequence({ types: ['email.queued', 'email.deferred', 'email.submitted'] })
    const [queued, deferred, submitted] = deliveries as unknown as [Delivery, Delivery, Delivery]
    try {
      expect((await target.send(queued)).json).toEqual({ ok: true })
      expect((await target.send(queued)).json).toEqual({ ok: true, duplicate: true })
      expect((await target.send(deferred)).json).toEqual({ ok: true })
      expect(store.ordering).toBe(false)
      expect(store.orderingIssue).toMatch(/legacy_hooks_order, legacy_hooks_order_lock, legacy_hooks_order_fact are missing/)
      // Said once, through the receiver's logger, with the store's reason and the fix.
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(
        /ordering: true, but the store answered a claim without an order mark.*are missing.*postgresDedupTableSql\(\)/,
      )
      // The owner creates the order tables; within a second the running store uses them.
      await pool.query(postgresDedupTableSql('legacy_hooks'))
      await sleep(1_100)
      expect((await target.send(submitted)).json).toEqual({ ok: true })
      expect(store.ordering).toBe(true)
      expect(warnings[1]).toMatch(/keeps order marks again/)
    } finally {
      await target.close()
    }
    expect(seen.map(({ order }) => order)).toEqual([
      { status: 'unknown', key: `email:${emailId}`, newestHandled: null, reason: 'store_without_ordering' },
      { status: 'unknown', key: `email:${emailId}`, newestHandled: null, reason: 'store_without_ordering' },
      { status: 'first', key: `email:${emailId}`, newestHandled: null },
    ])
  })

  it('on a table from before ordering, for a role that may not create the mark table, deduplicates and reports ordering unknown', async () => {
    const table = 'legacy_least_privilege'
    const role = 'ordering_rw'
    const password = `pw-${crypto.randomUUID()}`
    await pool.query(
      `CREATE TABLE ${table} (key text PRIMARY KEY, done boolean NOT NULL, token text, attempt integer NOT NULL, expires_at timestamptz NOT NULL)`,
    )
    await pool.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`)
    await pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO ${role}`)
    const url = new URL(postgres.url)
    url.username = role
    url.password = password
    // One connection: after the failed creation of the mark table, the same connection serves every call.
    const rolePool = new pg.Pool({ connectionString: url.toString(), max: 1 })
    const store = new PostgresDedupStore({ pool: rolePool, table })
    const seen: Seen = []
    const target = await receiverOn({ store }, seen)
    try {
      const { deliveries } = await createEmailSequence({ types: ['email.queued', 'email.submitted'] })
      for (const delivery of deliveries) expect((await target.send(delivery)).json).toEqual({ ok: true })
      expect((await target.send(deliveries[0] as NonNullable<(typeof deliveries)[0]>)).json).toEqual({ ok: true, duplicate: true })
    } finally {
      await target.close()
      await store.close()
      await rolePool.end()
    }
    expect(seen.map(({ order }) => [order.status, order.status === 'unknown' && order.reason])).toEqual([
      ['unknown', 'store_without_ordering'],
      ['unknown', 'store_without_ordering'],
    ])
    const marks = await pool.query('SELECT to_regclass($1) AS t', [`${table}_order`])
    expect(marks.rows[0].t).toBeNull()
  })
})

describe('ordering with Redis over HTTP', () => {
  let redis: TestServer
  let client: Redis
  const stores: DedupStore[] = []
  beforeAll(async () => {
    redis = await sharedRedis()
    client = new Redis(redis.url)
  })
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close?.()))
    await client?.quit()
    await redis?.stop()
  })

  it('keeps the mark in the scripts: a late older event is stale, skipped when asked, across stores', async () => {
    const seen = await lateEventAcrossRestart(() => {
      const store = new RedisDedupStore({ url: redis.url, prefix: 'ordering-http:' })
      stores.push(store)
      return { store }
    })
    expect(seen.map(({ type, order }) => [type, order.status])).toEqual(EXPECTED)
  })

  it('declares no ordering on a Cluster client (mark and event keys may be in different slots): ordering unknown, dedup works', async () => {
    // The store only reads `isCluster` to tell a Cluster client; the commands go to the real server.
    const cluster: RedisClient & { isCluster: true } = {
      isCluster: true,
      evalsha: (...args) => client.evalsha(...(args as [string, number])),
      eval: (...args) => client.eval(...(args as [string, number])),
      config: (...args) => client.config(...args),
      quit: () => Promise.resolve('OK'),
    }
    const store = new RedisDedupStore({ client: cluster, prefix: 'ordering-cluster:' })
    stores.push(store)
    expect(store.ordering).toBeUndefined()
    const seen: Seen = []
    const warnings: string[] = []
    const target = await receiverOn({ store, logger: { warn: (line) => void warnings.push(line), error: () => {} } }, seen)
    // Said once when the receiver is built; asking to skip stale events on it is refused.
    expect(warnings).toEqual([expect.stringMatching(/this store \(RedisDedupStore\) keeps no order marks/)])
    await expect(receiverOn({ store, skipStale: true }, [])).rejects.toThrow(/skipStale needs a store that keeps order marks/)
    const { deliveries } = await createEmailSequence({ types: ['email.queued'] })
    try {
      const delivery = deliveries[0] as NonNullable<(typeof deliveries)[0]>
      expect((await target.send(delivery)).json).toEqual({ ok: true })
      expect((await target.send(delivery)).json).toEqual({ ok: true, duplicate: true })
    } finally {
      await target.close()
    }
    // A store without the capability costs no order input: no key is computed.
    expect(seen.map(({ order }) => order)).toEqual([
      { status: 'unknown', key: null, newestHandled: null, reason: 'store_without_ordering' },
    ])
    // No mark, lock or fact key: the event's own key, and the store's schema stamp.
    expect((await client.keys('ordering-cluster:*')).sort()).toEqual(
      [
        `ordering-cluster:default:${deliveries[0]?.headers['webhook-id']}`,
        'ordering-cluster:{inbox}:v',
        'ordering-cluster:{inbox}:v-by',
      ].sort(),
    )
  })
})
