/**
 * With `ordering: true`, two events of one email are never handled at the same time, on every
 * store and across instances: the Ordering page's recipe (a slow `setStatus` in the older event's
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
import { sharedPostgres, sharedRedis, type TestServer } from '../services/servers.js'

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** What the handlers did: statuses written, each run's order status, and when each run started and ended. */
class Journal {
  readonly statuses = new Map<string, string>()
  readonly seen: string[] = []
  readonly runs: { email: string; started: number; ended: number }[] = []
  #started: (() => void)[] = []
  /** Resolves once a handler has started (the first after this call). */
  nextStart(): Promise<void> {
    return new Promise((resolve) => this.#started.push(resolve))
  }
  start(): void {
    for (const resolve of this.#started.splice(0)) resolve()
  }
  /**
   * Resolves once `count` runs have started, or after `ms`: a run that waits here ends only after
   * the other has started when both may run at once, whatever the machine's load; when they may
   * not, it waits out `ms` and the runs do not overlap.
   */
  async started(count: number, ms: number): Promise<void> {
    const until = performance.now() + ms
    while (this.runs.length < count && performance.now() < until) await sleep(10)
  }
}

/** The Ordering page's recipe over an in-memory "database" whose writes take `writeMs[status]`. */
function recipe(journal: Journal, writeMs: Record<string, number>, gate?: () => Promise<void>) {
  const setStatus = async (id: string, status: string) => {
    const run = { email: id, started: performance.now(), ended: 0 }
    journal.runs.push(run)
    journal.start()
    await (gate ? gate() : sleep(writeMs[status] ?? 0))
    journal.statuses.set(id, status)
    run.ended = performance.now()
  }
  return {
    'email.deferred': async (event: WebhookEvent, ctx: { order: EventOrder }) => {
      journal.seen.push(`deferred:${ctx.order.status}`)
      if (ctx.order.status === 'stale') return
      await setStatus(event.data.id as string, 'deferred')
    },
    'email.submitted': async (event: WebhookEvent, ctx: { order: EventOrder }) => {
      journal.seen.push(`submitted:${ctx.order.status}`)
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
let postgres: TestServer
let redis: TestServer
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
  ;[postgres, redis] = await Promise.all([sharedPostgres(), sharedRedis()])
}, 120_000)
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close?.()))
  await Promise.all([postgres?.stop(), redis?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

/**
 * `count` receivers on the case's store (one store object each when the case is shared), each
 * warmed up with an event of its own email first, so pools and tables are open before the test's
 * timing starts.
 */
async function receivers(
  c: Case,
  count: number,
  journal: Journal,
  writeMs: Record<string, number>,
  handlerTimeoutMs = 4_000,
  gate?: () => Promise<void>,
) {
  const shared = c.store()
  const targets: Target[] = []
  const logger = process.env.ONE_AT_A_TIME_LOG ? console : false
  for (let i = 0; i < count; i++) {
    const store = c.shared && i > 0 ? c.store() : shared
    targets.push(
      await express5Listen.create(TEST_SECRET, recipe(journal, writeMs, gate), { store, ordering: true, handlerTimeoutMs, logger }),
    )
  }
  for (const target of targets) {
    const warm = await createEmailSequence({ types: ['email.queued'] })
    expect((await target.send(warm.deliveries[0] as Delivery)).status).toBe(200)
  }
  return targets
}

for (const c of CASES) {
  const instances = c.shared ? [1, 2] : [1]
  for (const count of instances) {
    const where = count === 1 ? 'one receiver' : 'two receivers (instances) on one database'
    describe(`${c.name}, ${where}: one event of an email at a time`, () => {
      it('handles a newer event that arrives while an older one runs after it, so the recipe ends with the newer status', async () => {
        const journal = new Journal()
        const targets = await receivers(c, count, journal, { deferred: 300, submitted: 0 })
        const { emailId, deliveries } = await createEmailSequence({ types: ['email.deferred', 'email.submitted'] })
        const [deferred, submitted] = deliveries as unknown as [Delivery, Delivery]
        try {
          const started = journal.nextStart()
          const first = (targets[0] as Target).send(deferred)
          await started // the older event's slow write is under way
          const second = (targets[count - 1] as Target).send(submitted)
          const answers = await Promise.all([first, second])
          expect(answers.map((answer) => answer.status)).toEqual([200, 200])
        } finally {
          await Promise.all(targets.map((target) => target.close()))
        }
        // The newer event ran only after the older one was done, and saw it: latest, not first.
        expect(journal.seen).toEqual(['deferred:first', 'submitted:latest'])
        expect(journal.statuses.get(emailId)).toBe('submitted')
      })

      it('answers 409 in_flight with a short Retry-After when the older event outlasts the wait, and handles the retry after it', async () => {
        const journal = new Journal()
        // handlerTimeoutMs 4,000: an event waits at most 2,000 ms for another event of its email.
        // The older event's write lasts until the newer one has been answered (at most 3,600 ms),
        // so it outlasts the wait whatever the machine's load.
        let answered = false
        const gate = async () => {
          const until = performance.now() + 3_600
          while (!answered && performance.now() < until) await sleep(10)
        }
        const targets = await receivers(c, count, journal, {}, 4_000, gate)
        const { emailId, deliveries, events } = await createEmailSequence({ types: ['email.deferred', 'email.submitted'] })
        const [deferred, submitted] = deliveries as unknown as [Delivery, Delivery]
        try {
          const started = journal.nextStart()
          const first = (targets[0] as Target).send(deferred)
          await started
          const busy = await (targets[count - 1] as Target).send(submitted)
          answered = true
          expect([busy.status, busy.json.error?.code, busy.headers.get('retry-after')]).toEqual([409, 'in_flight', '1'])
          expect(busy.json.error?.message).toMatch(/Another event of the same email/)
          expect((await first).status).toBe(200)
          const retry = await (targets[count - 1] as Target).send(await createSignedDelivery({ event: events[1] as WebhookEvent }))
          expect(retry.status).toBe(200)
        } finally {
          await Promise.all(targets.map((target) => target.close()))
        }
        expect(journal.seen).toEqual(['deferred:first', 'submitted:latest'])
        expect(journal.statuses.get(emailId)).toBe('submitted')
      })

      it('keeps other emails apart: their events run at the same time', async () => {
        const journal = new Journal()
        // Each write waits (up to 3 s) for the other email's run to start: a second connection to
        // open on a loaded machine cannot make them miss each other, and one at a time would not
        // let them overlap however long the write lasts.
        const targets = await receivers(c, count, journal, {}, 4_000, () => journal.started(2, 3_000))
        const one = await createEmailSequence({ types: ['email.deferred'] })
        const two = await createEmailSequence({ types: ['email.deferred'] })
        try {
          const answers = await Promise.all([
            (targets[0] as Target).send(one.deliveries[0] as Delivery),
            (targets[count - 1] as Target).send(two.deliveries[0] as Delivery),
          ])
          expect(answers.map((answer) => answer.status)).toEqual([200, 200])
        } finally {
          await Promise.all(targets.map((target) => target.close()))
        }
        // The two runs overlap: each started before the other ended.
        const [a, b] = journal.runs.filter((run) => run.email === one.emailId || run.email === two.emailId)
        expect(a && b && a.started < b.ended && b.started < a.ended).toBe(true)
      })
    })
  }
}
