/**
 * The dedup-store and ordering conformance suites against a real PostgreSQL 15 and a real Redis 7
 * (started for this file, see test/services/servers.ts): stores that create their own pool or
 * client, stores on a pool or client the application gives, and two stores on one server used in turn.
 */
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { sharedPostgres, sharedRedis, type TestServer } from '../services/servers.js'
import { scaled } from '../support/time.js'
import { AlternatingStore, conformance, ordering } from './conformance-helpers.js'

/**
 * The PostgreSQL stores' deadline is a margin here, not what the suites test (deadline and
 * silent-server tests do): 200 concurrent claims of one key through a pool of 5 overran the connect
 * wait of the default 3 s (1.5 s) in matrix runs on a loaded machine, as dynalite's did (its file).
 */
const queryTimeoutMs = scaled(4 * 3_000)

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
})

conformance(
  'PostgresDedupStore (connectionString, real PostgreSQL 15)',
  () => new PostgresDedupStore({ connectionString: postgres.url, queryTimeoutMs }),
)
// The given pool outlives every store: close() must leave it open for the next test.
conformance(
  'PostgresDedupStore (a given pg.Pool, table "hooks_given_pool")',
  () => new PostgresDedupStore({ pool, table: 'hooks_given_pool', queryTimeoutMs }),
)
conformance(
  'PostgresDedupStore (two pools on one database, calls alternate)',
  () =>
    new AlternatingStore([
      new PostgresDedupStore({ connectionString: postgres.url, queryTimeoutMs }),
      new PostgresDedupStore({ connectionString: postgres.url, queryTimeoutMs }),
    ]),
)

conformance('RedisDedupStore (url, real Redis 7 with appendfsync always)', () => new RedisDedupStore({ url: redis.url }))
conformance('RedisDedupStore (a given ioredis client, prefix "given:")', () => new RedisDedupStore({ client, prefix: 'given:' }))
conformance(
  'RedisDedupStore (two clients on one server, calls alternate)',
  () => new AlternatingStore([new RedisDedupStore({ url: redis.url }), new RedisDedupStore({ url: redis.url })]),
)

ordering(
  'PostgresDedupStore (connectionString, real PostgreSQL 15)',
  () => new PostgresDedupStore({ connectionString: postgres.url, queryTimeoutMs }),
)
ordering(
  'PostgresDedupStore (a given pg.Pool, table "hooks_given_pool")',
  () => new PostgresDedupStore({ pool, table: 'hooks_given_pool', queryTimeoutMs }),
)
ordering(
  'PostgresDedupStore (two pools on one database, calls alternate)',
  () =>
    new AlternatingStore([
      new PostgresDedupStore({ connectionString: postgres.url, queryTimeoutMs }),
      new PostgresDedupStore({ connectionString: postgres.url, queryTimeoutMs }),
    ]),
)
ordering('RedisDedupStore (url, real Redis 7 with appendfsync always)', () => new RedisDedupStore({ url: redis.url }))
ordering('RedisDedupStore (a given ioredis client, prefix "given:")', () => new RedisDedupStore({ client, prefix: 'given:' }))
ordering(
  'RedisDedupStore (two clients on one server, calls alternate)',
  () => new AlternatingStore([new RedisDedupStore({ url: redis.url }), new RedisDedupStore({ url: redis.url })]),
)
