/**
 * With `ordering: true`, two events of one email are never handled at the same time, on every
 * store and across instances: the README's recipe (a slow `setStatus` in the older event's
 * handler, the newer event arriving meanwhile) ends with the newer status. Over real HTTP (Express 5
 * on a listener); two "instances" are two receivers, each with its own store object over the same
 * SQLite file, PostgreSQL database or Redis server, so only the store keeps them apart.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type DedupStore, type EventOrder, MemoryDedupStore, type WebhookEvent } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createEmailSequence, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Delivery, express5Listen, type Target } from '../adapters/targets.js'
import { type RunningServer, startPostgres, startRedis } from '../services/servers.js'

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The README's recipe over an in-memory "database" whose writes take `writeMs[status]`. */
function recipe(statuses: Map<string, string>, writeMs: Record<string, number>, seen: string[]) {
  const setStatus = async (id: string, status: string) => {
    await sleep(writeMs[status] ?? 0)
    statuses.set(id, status)
  }
  return {
    'email.deferred': async (event: WebhookEvent, ctx: { order: EventOrder }) => {
      seen.push(`deferred:${ctx.order.status}`)
      if (ctx.order.status === 'stale') return
      await setStatus(event.data.id as string, 'deferred')
    },
    'email.submitted': async (event: WebhookEvent, ctx: { order: EventOrder }) => {
      seen.push(`submitted:${ctx.order.status}`)
      await setStatus(event.data.id as string, 'submitted')
    },
  }
}

interface Case {
  name: string
  /** A new store object over the case's shared database. */
  store(): DedupStore
  /** Whether two store objects share what they hold (two instances); false for the in-process memory store. */
  shared: boolean
}

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-one-at-a-time-'))
let postgres: RunningServer
let redis: RunningServer
const stores: DedupStore[] = []
const keep = <S extends DedupStore>(store: S): S => {
  stores.push(store)
  return store
}
const memory = new MemoryDedupStore()

const CASES: Case[] = [
  { name: 'MemoryDedupStore', store: () => memory, shared: false },
  { name: 'SqliteDedupStore', store: () => keep(new SqliteDedupStore({ path: join(dir, 'dedup.db') })), shared: true },
  {
    name: 'PostgresDedupStore',
    store: () => keep(new PostgresDedupStore({ connectionString: postgres.url, table: 'one_at_a_time' })),
    shared: true,
  },
  { name: 'RedisDedupStore', store: () => keep(new RedisDedupStore({ url: redis.url, prefix: 'one-at-a-time:' })), shared: true },
]

beforeAll(async () => {
  ;[postgres, redis] = await Promise.all([startPostgres(), startRedis()])
}, 120_000)
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close?.()))
  await Promise.all([postgres?.stop(), redis?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

async function receivers(
  c: Case,
  count: number,
  statuses: Map<string, string>,
  writeMs: Record<string, number>,
  seen: string[],
  handlerTimeoutMs = 4_000,
) {
  const shared = c.store()
  const targets: Target[] = []
  for (let i = 0; i < count; i++) {
    const store = c.shared && i > 0 ? c.store() : shared
    targets.push(
      await express5Listen.create(TEST_SECRET, recipe(statuses, writeMs, seen), { store, ordering: true, handlerTimeoutMs, logger: false }),
    )
  }
  return targets
}

for (const c of CASES) {
  const instances = c.shared ? [1, 2] : [1]
  for (const count of instances) {
    const where = count === 1 ? 'one receiver' : 'two receivers (instances) on one database'
    describe(`${c.name}, ${where}: one event of an email at a time`, () => {
      it('handles a newer event that arrives while an older one runs after it, so the recipe ends with the newer status', async () => {
        const statuses = new Map<string, string>()
        const seen: string[] = []
        const targets = await receivers(c, count, statuses, { deferred: 300, submitted: 0 }, seen)
        const { emailId, deliveries } = await createEmailSequence({ types: ['email.deferred', 'email.submitted'] })
        const [deferred, submitted] = deliveries as unknown as [Delivery, Delivery]
        try {
          const first = targets[0]?.send(deferred) as Promise<{ status: number }>
          await sleep(60)
          const second = (targets[count - 1] as Target).send(submitted)
          const answers = await Promise.all([first, second])
          expect(answers.map((answer) => answer.status)).toEqual([200, 200])
        } finally {
          await Promise.all(targets.map((target) => target.close()))
        }
        // The newer event ran only after the older one was done, and saw it: latest, not first.
        expect(seen).toEqual(['deferred:first', 'submitted:latest'])
        expect(statuses.get(emailId)).toBe('submitted')
      })

      it('answers 409 in_flight with a short Retry-After when the older event outlasts the wait, and handles the retry after it', async () => {
        const statuses = new Map<string, string>()
        const seen: string[] = []
        // handlerTimeoutMs 600: an event waits at most 300 ms for another event of its email.
        const targets = await receivers(c, count, statuses, { deferred: 450, submitted: 0 }, seen, 600)
        const { emailId, deliveries, events } = await createEmailSequence({ types: ['email.deferred', 'email.submitted'] })
        const [deferred, submitted] = deliveries as unknown as [Delivery, Delivery]
        try {
          const first = targets[0]?.send(deferred) as Promise<{ status: number }>
          await sleep(30)
          const busy = await (targets[count - 1] as Target).send(submitted)
          expect([busy.status, busy.json.error?.code, busy.headers.get('retry-after')]).toEqual([409, 'in_flight', '1'])
          expect(busy.json.error?.message).toMatch(/Another event of the same email/)
          expect((await first).status).toBe(200)
          const retry = await (targets[count - 1] as Target).send(await createSignedDelivery({ event: events[1] as WebhookEvent }))
          expect(retry.status).toBe(200)
        } finally {
          await Promise.all(targets.map((target) => target.close()))
        }
        expect(seen).toEqual(['deferred:first', 'submitted:latest'])
        expect(statuses.get(emailId)).toBe('submitted')
      })

      it('keeps other emails apart: their events run at the same time', async () => {
        const statuses = new Map<string, string>()
        const seen: string[] = []
        const targets = await receivers(c, count, statuses, { deferred: 300 }, seen)
        const one = await createEmailSequence({ types: ['email.deferred'] })
        const two = await createEmailSequence({ types: ['email.deferred'] })
        try {
          const started = performance.now()
          const answers = await Promise.all([
            (targets[0] as Target).send(one.deliveries[0] as Delivery),
            (targets[count - 1] as Target).send(two.deliveries[0] as Delivery),
          ])
          expect(answers.map((answer) => answer.status)).toEqual([200, 200])
          // One after the other would take 600 ms.
          expect(performance.now() - started).toBeLessThan(550)
        } finally {
          await Promise.all(targets.map((target) => target.close()))
        }
      })
    })
  }
}
