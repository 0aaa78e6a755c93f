/**
 * The dedup-store conformance suite against a real PostgreSQL 15 and a real Redis 7 (started for
 * this file, see test/services/servers.ts): stores that create their own pool or client, stores
 * on a pool or client the application gives, and two stores on one server used in turn.
 */
import type { Claim, ClaimOptions, CompleteOptions, DedupStore } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { dedupStoreConformance } from '@email-webhooks/core/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { type RunningServer, startPostgres, startRedis } from '../services/servers.js'

let postgres: RunningServer
let redis: RunningServer
let pool: pg.Pool
let client: Redis

beforeAll(async () => {
  ;[postgres, redis] = await Promise.all([startPostgres(), startRedis()])
  pool = new pg.Pool({ connectionString: postgres.url, max: 5 })
  client = new Redis(redis.url)
})
afterAll(async () => {
  await Promise.all([pool?.end(), client?.quit()])
  await Promise.all([postgres?.stop(), redis?.stop()])
})

/** Two stores on one server, used in turn: a claim made through one is seen and fenced by the other. */
class AlternatingStore implements DedupStore {
  #turn = 0
  constructor(readonly stores: readonly [DedupStore, DedupStore]) {}
  #next(): DedupStore {
    return this.stores[this.#turn++ % 2] as DedupStore
  }
  claim(key: string, opts: ClaimOptions) {
    return this.#next().claim(key, opts)
  }
  complete(claim: Claim, opts: CompleteOptions) {
    return this.#next().complete(claim, opts)
  }
  release(claim: Claim) {
    return this.#next().release(claim)
  }
  async close() {
    await Promise.all(this.stores.map((store) => store.close?.()))
  }
}

dedupStoreConformance(
  'PostgresDedupStore (connectionString, real PostgreSQL 15)',
  { describe, it },
  { createStore: () => new PostgresDedupStore({ connectionString: postgres.url }) },
)
// The given pool outlives every store: close() must leave it open for the next test.
dedupStoreConformance(
  'PostgresDedupStore (a given pg.Pool, table "hooks_given_pool")',
  { describe, it },
  { createStore: () => new PostgresDedupStore({ pool, table: 'hooks_given_pool' }) },
)
dedupStoreConformance(
  'PostgresDedupStore (two pools on one database, calls alternate)',
  { describe, it },
  {
    createStore: () =>
      new AlternatingStore([
        new PostgresDedupStore({ connectionString: postgres.url }),
        new PostgresDedupStore({ connectionString: postgres.url }),
      ]),
  },
)

dedupStoreConformance(
  'RedisDedupStore (url, real Redis 7 with appendfsync always)',
  { describe, it },
  { createStore: () => new RedisDedupStore({ url: redis.url }) },
)
dedupStoreConformance(
  'RedisDedupStore (a given ioredis client, prefix "given:")',
  { describe, it },
  { createStore: () => new RedisDedupStore({ client, prefix: 'given:' }) },
)
dedupStoreConformance(
  'RedisDedupStore (two clients on one server, calls alternate)',
  { describe, it },
  { createStore: () => new AlternatingStore([new RedisDedupStore({ url: redis.url }), new RedisDedupStore({ url: redis.url })]) },
)
