/**
 * Stores made by 0.1.0 (schema version 1) keep working with this release, and a schema newer than
 * the code is refused (here for SQLite, PostgreSQL, Redis, DynamoDB and Deno KV; the Cloudflare
 * stores inside workerd, test/runtimes/cloudflare.test.ts). The fixtures (fixtures/schema-v1) are the tables and keys 0.1.0's own SQLite,
 * PostgreSQL and Redis stores wrote: done, leased, released and ordered events, an order mark and a
 * fact, an inbox with a dead entry, a failed email head with two entries behind it, a done entry and
 * another email's entry. Each store opens them, upgrades them once (stamped version 2), keeps every
 * record, and then passes the dedup, ordering and inbox conformance suites on the upgraded data.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb'
import { type DedupStore, DedupStoreError, type InboxQueue } from '@email-webhooks/core'
import { DenoKvDedupStore, type DenoKvLike } from '@email-webhooks/core/deno-kv'
import { DynamoDBDedupStore } from '@email-webhooks/core/dynamodb'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { dedupStoreConformance, inboxConformance, orderingConformance } from '@email-webhooks/core/testing'
import Database from 'better-sqlite3'
import Redis from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Dynalite, type DynamoProxy, startDynalite, startDynamoProxy } from '../services/dynalite.js'
import { postgresWithClient, sharedRedis, type TestServer } from '../services/servers.js'
import { scaled } from '../support/time.js'

const HERE = dirname(fileURLToPath(import.meta.url))
const FIXTURES = join(HERE, 'fixtures/schema-v1')
const ROOT = join(HERE, '..', '..')
const CORE_VERSION: string = JSON.parse(readFileSync(join(ROOT, 'packages/core/package.json'), 'utf8')).version
const WRITTEN_BY = `@email-webhooks/core ${CORE_VERSION}`
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
/** The stamp a newer release would write. */
const NEWER = { version: 4, writtenBy: '@email-webhooks/core 9.1.0' }

/**
 * A fixture with its `{{t±ms}}` times made into ms, as if 0.1.0 wrote it 10 s ago: what it left
 * due (written up to 3 s into its run) is due now, what it left for later (an hour, a day) still is.
 */
function fixture(name: string): string {
  const writtenAt = Date.now() - 10_000
  return readFileSync(join(FIXTURES, name), 'utf8').replace(/\{\{t([+-][0-9]+)\}\}/g, (_, offset: string) =>
    String(writtenAt + Number(offset)),
  )
}

/** The error a store gives for the newer stamp: both versions, who wrote it, what to upgrade. */
function expectNewerRefused(error: unknown, { version = 4, supported = 2, writtenBy = NEWER.writtenBy as string | null } = {}): void {
  expect(error).toBeInstanceOf(DedupStoreError)
  expect((error as DedupStoreError).code).toBe('misconfigured')
  const { message } = error as DedupStoreError
  expect(message).toContain(`schema version ${version}${writtenBy ? ` (written by ${writtenBy})` : ','}`)
  expect(message).toContain(`this @email-webhooks/core ${CORE_VERSION} knows (up to version ${supported})`)
  expect(message).toContain(
    `Upgrade @email-webhooks/core (and the adapter packages beside it) to ${writtenBy ? `${writtenBy} or later` : 'the release that wrote it or later'}`,
  )
}

async function refusal(call: () => unknown): Promise<unknown> {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error('expected the store to refuse the newer schema')
}

/** Every event 0.1.0 recorded is as it was: done, held, released (its attempt count kept), and the ordered one's mark and fact. */
async function expectEventsKept(store: DedupStore): Promise<void> {
  expect(await store.lookup?.('default:evt-done')).toBe('done')
  expect(await store.claim('default:evt-done', LONG)).toEqual({ status: 'duplicate' })
  expect(await store.claim('default:evt-leased', LONG)).toMatchObject({ status: 'in_flight' })
  const released = await store.claim('default:evt-released', LONG)
  expect(released).toMatchObject({ status: 'acquired', claim: { attempt: 2 } })
  if (released.status === 'acquired') expect(await store.complete(released.claim, LONG)).toBe(true)
  expect(await store.claim('default:evt-ordered', LONG)).toEqual({ status: 'duplicate' })
  // Another copy of the ordered event's fact (one email, type and ms) sees the mark and the count 0.1.0 left.
  const mark = { createdAtMs: 1_700_000_000_000, eventId: 'evt-copy', type: 'email.delivered' }
  const order = { key: 'default:email:e-1', mark, fact: 'email.delivered|1700000000000' }
  const copy = await store.claim('default:evt-copy', { ...LONG, order })
  expect(copy).toMatchObject({
    status: 'acquired',
    order: {
      mark: { createdAtMs: 1_700_000_000_000, eventId: 'evt-ordered', type: 'email.delivered' },
      fact: { handled: 1, reconciled: 0 },
    },
  })
  if (copy.status === 'acquired')
    expect(await store.complete(copy.claim, { ...LONG, order, factChange: { handled: 1, reconciled: 0 } })).toBe(true)
}

/**
 * The inbox 0.1.0 left works: the done and dead entries read as they were (no history: 0.1.0 kept
 * none), an ordered take passes over email a (its head waits an hour) to email b, a retry of the dead
 * entry keeps its attempts, and everything due is taken and finished, so the conformance suite after
 * this starts from an inbox where only email a waits.
 */
async function expectInboxKept(inbox: InboxQueue): Promise<void> {
  expect(await inbox.get('default:c1')).toMatchObject({ state: 'done', attempts: 1, lastError: null })
  expect(await inbox.get('default:d1')).toMatchObject({
    state: 'dead',
    attempts: 1,
    lastError: 'gone for good',
    failedAt: null,
    retriedAt: null,
    attemptsBeforeRetry: 0,
  })
  expect(await inbox.get('default:a1')).toMatchObject({ state: 'pending', attempts: 1, lastError: 'down' })
  const b1 = await inbox.take({ leaseMs: 60_000, ordered: true })
  expect(b1?.key).toBe('default:b1')
  expect(await inbox.take({ leaseMs: 60_000, ordered: true })).toBeUndefined()
  expect(await inbox.retry('dead')).toBe(1)
  expect(await inbox.get('default:d1')).toMatchObject({ state: 'pending', attempts: 0, attemptsBeforeRetry: 1 })
  const d1 = await inbox.take({ leaseMs: 60_000, ordered: true })
  expect(d1?.key).toBe('default:d1')
  for (const lease of [b1, d1]) expect(await inbox.finish(lease as NonNullable<typeof lease>, { retentionMs: 3_600_000 })).toBe(true)
  expect(await inbox.stats()).toMatchObject({ pending: 3, running: 0, dead: 0 })
}

/**
 * The three stores run side by side, each in order: the upgrade first; then the dedup and ordering
 * cases side by side (keys and emails of their own); then the inbox cases one after another (a
 * take may take any due entry), and the refusals.
 */
const sideBySide = { describe, it: it.concurrent }
const oneByOne = { describe: describe.sequential, it: it.sequential }
/** As in conformance-helpers.ts: 1 s, so that a late call on a busy machine still finds a lease or retention live. */
const shortMs = scaled(1_000)

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-schema-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe.concurrent('SQLite: a file made by 0.1.0', () => {
  const path = join(dir, 'v1.db')
  const stamp = (file: string) => {
    const db = new Database(file, { readonly: true })
    try {
      return db.prepare('SELECT version, written_by FROM email_webhook_dedup_schema').all()
    } finally {
      db.close()
    }
  }

  it.sequential('is upgraded once when the store opens it, stamped version 3, with every event, mark and inbox entry kept', async () => {
    const db = new Database(path)
    db.exec(fixture('sqlite.sql'))
    db.close()
    const store = new SqliteDedupStore({ path })
    try {
      expect(stamp(path)).toEqual([{ version: 3, written_by: WRITTEN_BY }])
      await expectEventsKept(store)
      await expectInboxKept(store.inbox as InboxQueue)
    } finally {
      await store.close()
    }
    // A second store on the upgraded file changes nothing.
    await new SqliteDedupStore({ path }).close()
    expect(stamp(path)).toEqual([{ version: 3, written_by: WRITTEN_BY }])
  })

  const open = () => new SqliteDedupStore({ path })
  dedupStoreConformance('SqliteDedupStore on the upgraded 0.1.0 file', sideBySide, { createStore: open, checkDurations: true, shortMs })
  orderingConformance('SqliteDedupStore on the upgraded 0.1.0 file', sideBySide, { createStore: open, shortMs })
  inboxConformance('SqliteDedupStore on the upgraded 0.1.0 file', oneByOne, { createStore: open, createPeerStore: open })

  it.sequential('refuses a file stamped by a newer release, read-only too, and changes nothing in it', async () => {
    const newer = join(dir, 'newer.db')
    await new SqliteDedupStore({ path: newer }).close()
    const db = new Database(newer)
    db.prepare('UPDATE email_webhook_dedup_schema SET version = ?, written_by = ?').run(NEWER.version, NEWER.writtenBy)
    db.exec('DROP TABLE email_webhook_dedup_order_fact')
    db.close()
    expectNewerRefused(await refusal(() => new SqliteDedupStore({ path: newer })), { supported: 3 })
    expectNewerRefused(await refusal(() => new SqliteDedupStore({ path: newer, readOnly: true })), { supported: 3 })
    expect(stamp(newer)).toEqual([{ version: NEWER.version, written_by: NEWER.writtenBy }])
    const check = new Database(newer, { readonly: true })
    // The table the newer release dropped was not made again.
    expect(check.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE name = 'email_webhook_dedup_order_fact'`).get()).toEqual({ n: 0 })
    check.close()
  })
})

describe.concurrent('PostgreSQL: tables made by 0.1.0', () => {
  const db = postgresWithClient()
  const stamp = async (table: string) => (await db.client.query(`SELECT version, written_by FROM ${table}_schema`)).rows

  it.sequential('are upgraded once when the store opens them, stamped version 2, with every event, mark and inbox entry kept', async () => {
    await db.client.query(fixture('postgres.sql'))
    const store = new PostgresDedupStore({ connectionString: db.server.url })
    try {
      await expectEventsKept(store)
      expect(await stamp('email_webhook_dedup')).toEqual([{ version: 2, written_by: WRITTEN_BY }])
      await expectInboxKept(store.inbox)
    } finally {
      await store.close()
    }
  })

  // A margin for the 200 concurrent claims of the suite on a loaded machine (server-conformance.test.ts says why).
  const open = () => new PostgresDedupStore({ connectionString: db.server.url, queryTimeoutMs: scaled(4 * 3_000) })
  dedupStoreConformance('PostgresDedupStore on the upgraded 0.1.0 tables', sideBySide, { createStore: open, checkDurations: true, shortMs })
  orderingConformance('PostgresDedupStore on the upgraded 0.1.0 tables', sideBySide, { createStore: open, shortMs })
  inboxConformance('PostgresDedupStore on the upgraded 0.1.0 tables', oneByOne, { createStore: open, createPeerStore: open })

  it.sequential('refuses tables stamped by a newer release before any other statement, createTable or not', async () => {
    const first = new PostgresDedupStore({ connectionString: db.server.url, table: 'newer' })
    await first.claim('default:before', LONG)
    await first.close()
    await db.client.query('UPDATE newer_schema SET version = $1, written_by = $2', [NEWER.version, NEWER.writtenBy])
    await db.client.query('ALTER TABLE newer_inbox DROP COLUMN retried_attempts')
    for (const createTable of [true, false]) {
      const store = new PostgresDedupStore({ connectionString: db.server.url, table: 'newer', createTable })
      try {
        expectNewerRefused(await refusal(() => store.claim('default:after', LONG)))
        expectNewerRefused(await refusal(() => store.inbox.stats()))
      } finally {
        await store.close()
      }
    }
    expect((await db.client.query(`SELECT key FROM newer`)).rows).toEqual([{ key: 'default:before' }])
    // The column the newer release dropped was not added again.
    const columns = await db.client.query(
      `SELECT 1 FROM information_schema.columns WHERE table_name = 'newer_inbox' AND column_name = 'retried_attempts'`,
    )
    expect(columns.rowCount).toBe(0)
    expect(await stamp('newer')).toEqual([{ version: NEWER.version, written_by: NEWER.writtenBy }])
  })

  it.sequential('are stamped version 2 when new, with the SQL for hand-run migrations giving the same stamp', async () => {
    const store = new PostgresDedupStore({ connectionString: db.server.url, table: 'fresh' })
    try {
      await store.claim('default:one', LONG)
    } finally {
      await store.close()
    }
    expect(await stamp('fresh')).toEqual([{ version: 2, written_by: WRITTEN_BY }])
    const { postgresDedupTableSql } = await import('@email-webhooks/core/postgres')
    await db.client.query(postgresDedupTableSql('by_hand'))
    expect(await stamp('by_hand')).toEqual([{ version: 2, written_by: WRITTEN_BY }])
  })
})

describe.concurrent('Redis: keys written by 0.1.0', () => {
  let server: TestServer
  let client: Redis
  const prefix = 'ewh:'
  beforeAll(async () => {
    server = await sharedRedis()
    client = new Redis(server.url)
  })
  afterAll(async () => {
    await client?.quit()
    await server?.stop()
  })

  it.sequential('are upgraded once when the store opens them (the ready set built), stamped version 2, with every event, mark and inbox entry kept', async () => {
    const { keys } = JSON.parse(fixture('redis.json')) as {
      keys: { key: string; type: string; value: string | string[] | Record<string, string>; pttl: number | null }[]
    }
    for (const { key, type, value, pttl } of keys) {
      if (type === 'string') await client.set(key, value as string)
      else if (type === 'hash') await client.hset(key, value as Record<string, string>)
      else if (type === 'set') await client.sadd(key, ...(value as string[]))
      else if (type === 'zset') {
        const pairs = value as string[]
        for (let i = 0; i < pairs.length; i += 2) await client.zadd(key, pairs[i + 1] as string, pairs[i] as string)
      } else throw new Error(`fixture key ${key} of type ${type}`)
      if (pttl !== null) await client.pexpire(key, pttl)
    }
    expect(await client.exists(`${prefix}{inbox}:v`, `${prefix}{inbox}:ready`)).toBe(0)
    const store = new RedisDedupStore({ url: server.url, prefix })
    try {
      expect(await store.lookup('default:evt-done')).toBe('done')
      // Opened by a call that is no inbox call: the inbox is indexed (each email's head) and stamped already.
      expect(await client.zrange(`${prefix}{inbox}:ready`, 0, -1)).toEqual(['default:b1', 'default:a1'])
      expect(await client.mget(`${prefix}{inbox}:v`, `${prefix}{inbox}:v-by`)).toEqual(['2', WRITTEN_BY])
      await expectEventsKept(store)
      await expectInboxKept(store.inbox)
    } finally {
      await store.close()
    }
  })

  const open = () => new RedisDedupStore({ url: server.url, prefix })
  dedupStoreConformance('RedisDedupStore on the upgraded 0.1.0 keys', sideBySide, { createStore: open, checkDurations: true, shortMs })
  orderingConformance('RedisDedupStore on the upgraded 0.1.0 keys', sideBySide, { createStore: open, shortMs })
  inboxConformance('RedisDedupStore on the upgraded 0.1.0 keys', oneByOne, { createStore: open, createPeerStore: open })

  it.sequential('refuses keys stamped by a newer release, and a stamp that is no version, writing nothing', async () => {
    await client.mset('newer:{inbox}:v', String(NEWER.version), 'newer:{inbox}:v-by', NEWER.writtenBy)
    const store = new RedisDedupStore({ url: server.url, prefix: 'newer:' })
    try {
      expectNewerRefused(await refusal(() => store.claim('default:after', LONG)))
      expectNewerRefused(await refusal(() => store.inbox.stats()))
    } finally {
      await store.close()
    }
    expect((await client.keys('newer:*')).sort()).toEqual(['newer:{inbox}:v', 'newer:{inbox}:v-by'])
    await client.set('other:{inbox}:v', 'not-a-version')
    const other = new RedisDedupStore({ url: server.url, prefix: 'other:' })
    try {
      const error = await refusal(() => other.claim('default:after', LONG))
      expect(error).toMatchObject({ code: 'misconfigured', message: expect.stringContaining('not a schema version') })
    } finally {
      await other.close()
    }
  })
})

describe('DynamoDB: each item carries its layout version (the store is new in this release: version 1)', () => {
  let server: Dynalite
  let proxy: DynamoProxy
  let client: DynamoDBClient
  let proxied: DynamoDBClient
  const table = 'schema_versions'
  beforeAll(async () => {
    server = await startDynalite()
    proxy = await startDynamoProxy(server.endpoint)
    await server.createTable(table)
    client = server.client()
    proxied = server.client({ endpoint: proxy.endpoint })
  })
  afterAll(async () => {
    client?.destroy()
    proxied?.destroy()
    await proxy?.stop()
    await server?.stop()
  })
  const item = async (key: string) =>
    (await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: key } }, ConsistentRead: true }))).Item
  const put = (key: string, status: string, expiresAt: number, schemaVersion?: number) =>
    client.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          pk: { S: key },
          status: { S: status },
          attempt: { N: '1' },
          expiresAt: { N: String(expiresAt) },
          ttl: { N: String(Math.ceil(expiresAt / 1000) + 3600) },
          ...(schemaVersion === undefined ? {} : { schemaVersion: { N: String(schemaVersion) } }),
        },
      }),
    )

  it('writes version 1 on the items it claims, and reads an item written before the attribute as its own', async () => {
    const store = new DynamoDBDedupStore({ client, table })
    const claimed = await store.claim('default:new', LONG)
    expect(claimed.status).toBe('acquired')
    expect((await item('default:new'))?.schemaVersion).toEqual({ N: '1' })
    await put('default:older', 'done', Date.now() + 3_600_000)
    expect(await store.claim('default:older', LONG)).toEqual({ status: 'duplicate' })
    expect(await store.lookup('default:older')).toBe('done')
  })

  it.sequential('refuses an item of a newer layout, live or expired, on the failed condition (ALL_OLD) or the read, and never takes it over', async () => {
    await put('default:newer-done', 'done', Date.now() + 3_600_000, 2)
    await put('default:newer-expired', 'lease', Date.now() - 1_000, 2)
    for (const via of [client, proxied]) {
      const store = new DynamoDBDedupStore({ client: via, table })
      for (const key of ['default:newer-done', 'default:newer-expired']) {
        expectNewerRefused(await refusal(() => store.claim(key, LONG)), { version: 2, supported: 1, writtenBy: null })
        expectNewerRefused(await refusal(() => store.lookup(key)), { version: 2, supported: 1, writtenBy: null })
      }
    }
    // The expired one was not taken over: no token, its attempt and version as the newer release left them.
    expect(await item('default:newer-expired')).toMatchObject({ status: { S: 'lease' }, attempt: { N: '1' }, schemaVersion: { N: '2' } })
    expect((await item('default:newer-expired'))?.token).toBeUndefined()
  })
})

describe('Deno KV: each value carries its layout version (the store is new in this release: version 1)', () => {
  /** An in-memory Deno KV with the part of the API the store uses (strong reads, check-and-set by versionstamp). */
  function memoryKv(): DenoKvLike & { values: Map<string, { value: unknown; versionstamp: string }> } {
    const values = new Map<string, { value: unknown; versionstamp: string }>()
    let stamp = 0
    return {
      values,
      async get<T>(key: readonly unknown[]) {
        const found = values.get(JSON.stringify(key))
        return { value: (found?.value ?? null) as T | null, versionstamp: found?.versionstamp ?? null }
      },
      atomic() {
        const checks: { key: readonly unknown[]; versionstamp: string | null }[] = []
        const sets: { key: readonly unknown[]; value: unknown }[] = []
        const op = {
          check(...more: { key: readonly unknown[]; versionstamp: string | null }[]) {
            checks.push(...more)
            return op
          },
          set(key: readonly unknown[], value: unknown) {
            sets.push({ key, value })
            return op
          },
          async commit() {
            if (checks.some((c) => (values.get(JSON.stringify(c.key))?.versionstamp ?? null) !== c.versionstamp)) return { ok: false }
            for (const s of sets) values.set(JSON.stringify(s.key), { value: structuredClone(s.value), versionstamp: String(++stamp) })
            return { ok: true }
          },
        }
        return op
      },
    }
  }

  it('writes version 1 in the values it writes, reads a value written before it as its own, and refuses a newer one without writing', async () => {
    const kv = memoryKv()
    const store = new DenoKvDedupStore(kv)
    const claimed = await store.claim('default:new', LONG)
    if (claimed.status !== 'acquired') throw new Error(`expected acquired, got ${JSON.stringify(claimed)}`)
    expect(kv.values.get(JSON.stringify(['email_webhook_dedup', 'default:new']))?.value).toMatchObject({ schemaVersion: 1 })
    expect(await store.complete(claimed.claim, LONG)).toBe(true)
    expect(kv.values.get(JSON.stringify(['email_webhook_dedup', 'default:new']))?.value).toMatchObject({ done: true, schemaVersion: 1 })
    await kv
      .atomic()
      .set(['email_webhook_dedup', 'default:older'], { done: true, token: null, attempt: 0, expiresAt: Date.now() + 60_000 })
      .commit()
    expect(await store.claim('default:older', LONG)).toEqual({ status: 'duplicate' })
    const newer = { done: false, token: null, attempt: 3, expiresAt: Date.now() - 1_000, schemaVersion: 2 }
    await kv.atomic().set(['email_webhook_dedup', 'default:newer'], newer).commit()
    const before = kv.values.get(JSON.stringify(['email_webhook_dedup', 'default:newer']))
    expectNewerRefused(await refusal(() => store.claim('default:newer', LONG)), { version: 2, supported: 1, writtenBy: null })
    expectNewerRefused(await refusal(() => store.lookup('default:newer')), { version: 2, supported: 1, writtenBy: null })
    expect(kv.values.get(JSON.stringify(['email_webhook_dedup', 'default:newer']))).toEqual(before)
  })
})
