// The statements proposed for phase 2 (store-prototypes.ts) pass the ordering conformance suite on
// real SQLite (a temp file), PostgreSQL 15 and Redis 7 (started for this file).
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { orderingConformance } from '@email-webhooks/core/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { type RunningServer, startPostgres, startRedis } from '../services/servers.js'
import { ProtoPostgresStore, ProtoRedisStore, ProtoSqliteStore, type SqliteDatabase } from './store-prototypes.js'

const OpenSqlite = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => SqliteDatabase
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-ordering-'))
const sqlite = new OpenSqlite(join(dir, 'ordering.db'))
let postgres: RunningServer
let redis: RunningServer
let pool: pg.Pool
let client: Redis
const suffix = crypto.randomUUID().slice(0, 8)

beforeAll(async () => {
  ;[postgres, redis] = await Promise.all([startPostgres(), startRedis()])
  pool = new pg.Pool({ connectionString: postgres.url, max: 5 })
  // The server stops at the end of the file: an idle client told "terminating connection" then
  // must not surface as an uncaught error (seen on Node 24 in the matrix).
  pool.on('error', () => {})
  client = new Redis(redis.url)
})
afterAll(async () => {
  sqlite.close()
  rmSync(dir, { recursive: true, force: true })
  await Promise.all([pool?.end(), client?.quit()])
  await Promise.all([postgres?.stop(), redis?.stop()])
})

const options = { closeAfterEach: false, shortMs: 300 }
orderingConformance(
  'SQLite prototype (mark upsert in the complete transaction)',
  { describe, it },
  {
    ...options,
    createStore: () => new ProtoSqliteStore(sqlite, `proto_${suffix}`),
  },
)
orderingConformance(
  'PostgreSQL prototype (complete and mark in one statement, COLLATE "C")',
  { describe, it },
  {
    ...options,
    createStore: () => new ProtoPostgresStore(pool, `proto_${suffix}`),
  },
)
orderingConformance(
  'Redis prototype (one Lua script, byte-wise id comparison)',
  { describe, it },
  {
    ...options,
    createStore: () => new ProtoRedisStore(client, `proto:${suffix}:`),
  },
)
