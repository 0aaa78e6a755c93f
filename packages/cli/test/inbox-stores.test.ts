/**
 * The `inbox` commands on PostgreSQL and Redis (real servers, test/services/servers.ts): the same
 * commands as on SQLite, through the store's InboxQueue, never printing the password.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DedupStore } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres, sharedRedis, type TestServer } from '../../../test/services/servers.js'
import { runCli } from './helpers/cli.js'
import { lines, queueEvents, writeHandlers } from './helpers/inbox.js'

const SLOW = 180_000
let dir: string
let postgres: TestServer
let redis: TestServer
const stores: Partial<Record<'postgres' | 'redis', DedupStore>> = {}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-inbox-stores-'))
  ;[postgres, redis] = await Promise.all([sharedPostgres(), sharedRedis()])
  // Made as a receiver makes them: tables created, the server's durability not checked.
  stores.postgres = new PostgresDedupStore({ connectionString: postgres.url })
  stores.redis = new RedisDedupStore({ url: redis.url, checkDurability: false })
}, 120_000)
afterAll(async () => {
  await Promise.all(Object.values(stores).map((store) => store.close?.()))
  await Promise.all([postgres?.stop(), redis?.stop()])
  await rm(dir, { recursive: true, force: true })
})

const server = (kind: 'postgres' | 'redis') => (kind === 'postgres' ? postgres : redis)
const NAME = { postgres: 'PostgreSQL', redis: 'Redis' } as const

describe('inbox commands on PostgreSQL and Redis', () => {
  it.for(['postgres', 'redis'] as const)(
    '%s: lists, works (a failing handler, then a fixed one) and counts the entries a receiver queued',
    { timeout: SLOW },
    async (kind) => {
      const store = stores[kind]
      if (!store?.inbox) throw new Error(`${NAME[kind]}DedupStore has no inbox (store.inbox is undefined)`)
      const { url, password } = server(kind)
      const ids = (await queueEvents(store, 2, { namespace: kind })).map((q) => q.id)
      const cli = (args: string[]) => runCli(['inbox', ...args, '--store', url], { cwd: dir })
      const listed = JSON.parse((await cli(['list', '--json', '--namespace', kind])).stdout)
      // The store is named, without its credentials.
      expect(listed.store).toMatch(new RegExp(`^${NAME[kind]} at \\S+ \\(from --store\\)$`))
      expect(listed.store).not.toContain(password)
      const list = listed.entries
      expect(list.map((e: { id: string }) => e.id).sort()).toEqual([...ids].sort())
      const failing = `{ namespace: '${kind}', logger: false, inbox: { maxAttempts: 1 } }`
      await writeHandlers(join(dir, `${kind}-failing.mjs`), join(dir, `${kind}-failing.log`), { fail: 'boom', options: failing })
      const failed = await cli(['work', '--once', '--handlers', `./${kind}-failing.mjs`])
      expect(failed.code, failed.stderr).toBe(1)
      expect(failed.stderr.split('\n').filter((line) => line.startsWith('dead: '))).toHaveLength(2)
      expect((await cli(['retry', '--dead'])).stdout).toContain('2 dead entries made pending')
      await writeHandlers(join(dir, `${kind}-fixed.mjs`), join(dir, `${kind}-fixed.log`))
      const fixed = await cli(['work', '--once', '--namespace', kind, '--handlers', `./${kind}-fixed.mjs`])
      expect(fixed.code, fixed.stderr).toBe(0)
      expect(lines(join(dir, `${kind}-fixed.log`)).sort()).toEqual([...ids].sort())
      const stats = JSON.parse((await cli(['stats', '--json'])).stdout)
      expect(stats).toMatchObject({ pending: 0, running: 0, dead: 0, lagMs: null })
      expect(JSON.stringify(list) + failed.stderr + fixed.stdout).not.toContain(password)
    },
  )
})
