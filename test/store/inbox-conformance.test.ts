// The inbox conformance suite on every built-in store's inbox: memory, SQLite (a temp file), and
// PostgreSQL 15 and Redis 7 (real servers started for this file, see test/services/servers.ts),
// each server store on a table or prefix of its own. The stores run side by side (their queues are
// apart), the cases of one store one after another (a take may take any due entry of its queue).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryDedupStore } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { inboxConformance } from '@email-webhooks/core/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { sharedPostgres, sharedRedis, type TestServer } from '../services/servers.js'
import { scaled } from '../support/time.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-inbox-'))
let postgres: TestServer
let redis: TestServer
let pool: pg.Pool
let client: Redis

beforeAll(async () => {
  ;[postgres, redis] = await Promise.all([sharedPostgres(), sharedRedis()])
  pool = new pg.Pool({ connectionString: postgres.url, max: 5 })
  // The server stops at the end of the file; an idle client's "terminating connection" is expected then.
  pool.on('error', () => {})
  client = new Redis(redis.url)
})
afterAll(async () => {
  await Promise.all([pool?.end(), client?.quit()])
  await Promise.all([postgres?.stop(), redis?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

const stores = { describe: describe.concurrent, it: it.sequential }
/** The suite's 300 ms, stretched by TEST_TIME_SCALE. */
const shortMs = scaled(300)

inboxConformance('MemoryDedupStore', stores, { createStore: () => new MemoryDedupStore(), shortMs })
inboxConformance('SqliteDedupStore (a temp file)', stores, {
  createStore: () => new SqliteDedupStore({ path: join(dir, 'inbox.db') }),
  createPeerStore: () => new SqliteDedupStore({ path: join(dir, 'inbox.db') }),
  shortMs,
})

inboxConformance('PostgresDedupStore (connectionString, real PostgreSQL 15, table "inbox_url")', stores, {
  createStore: () => new PostgresDedupStore({ connectionString: postgres.url, table: 'inbox_url' }),
  createPeerStore: () => new PostgresDedupStore({ connectionString: postgres.url, table: 'inbox_url' }),
  shortMs,
})
// The given pool outlives every store: close() leaves it open for the next test.
inboxConformance('PostgresDedupStore (a given pg.Pool, table "inbox_pool")', stores, {
  createStore: () => new PostgresDedupStore({ pool, table: 'inbox_pool' }),
  createPeerStore: () => new PostgresDedupStore({ connectionString: postgres.url, table: 'inbox_pool' }),
  shortMs,
})

inboxConformance('RedisDedupStore (url, real Redis 7 with appendfsync always, prefix "inbox-url:")', stores, {
  createStore: () => new RedisDedupStore({ url: redis.url, prefix: 'inbox-url:' }),
  createPeerStore: () => new RedisDedupStore({ url: redis.url, prefix: 'inbox-url:' }),
  shortMs,
})
inboxConformance('RedisDedupStore (a given ioredis client, prefix "inbox-given:")', stores, {
  createStore: () => new RedisDedupStore({ client, prefix: 'inbox-given:' }),
  createPeerStore: () => new RedisDedupStore({ url: redis.url, prefix: 'inbox-given:' }),
  shortMs,
})
