/**
 * The console's reads on the three shared-capable stores, against real servers (SQLite file,
 * PostgreSQL 15, Redis 7; test/services/servers.ts): what a real receiver left behind is what the
 * pages say. Request mode with ordering (records, leases, marks, facts: an email's story without
 * ids but the mark's), inbox mode (entries, a dead letter retried from the console and handled
 * once by the worker), keyset paging with filters, plan counts, and a server that is down.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createReceiver, type DedupStore, type InboxQueue } from '@email-webhooks/core'
import { emailWebhookConsole } from '@email-webhooks/core/console'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createEvent, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RunningServer, startPostgres, startRedis } from '../services/servers.js'
import { CREDENTIALS, deadEntries, formToken, get, item, post, textOf } from './helpers.js'

type Kind = 'sqlite' | 'postgres' | 'redis'
const KINDS: Kind[] = ['sqlite', 'postgres', 'redis']
const dir = mkdtempSync(join(tmpdir(), 'console-stores-'))
let postgres: RunningServer
let redis: RunningServer
const stores = {} as Record<Kind, DedupStore>

beforeAll(async () => {
  ;[postgres, redis] = await Promise.all([startPostgres(), startRedis()])
  stores.sqlite = new SqliteDedupStore({ path: join(dir, 'dedup.db') })
  stores.postgres = new PostgresDedupStore({ connectionString: postgres.url })
  stores.redis = new RedisDedupStore({ url: redis.url })
}, 120_000)
afterAll(async () => {
  await Promise.all(Object.values(stores).map((store) => store.close?.()))
  await Promise.all([postgres?.stop(), redis?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

const at = (minutes: number) => new Date(Date.now() - 60 * 60_000 + minutes * 60_000).toISOString()

async function deliver(receiver: ReturnType<typeof createReceiver>, type: string, email: string, createdAt: string, id?: string) {
  const event = createEvent(type, { data: { id: email }, created_at: createdAt, ...(id ? { id } : {}) })
  const delivery = await createSignedDelivery({ event })
  const answer = await receiver.receive({ headers: delivery.headers, body: delivery.body })
  return { id: event.id, status: answer.status }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe.each(KINDS)('the console on %s', (kind) => {
  const store = () => stores[kind]
  const inbox = () => store().inbox as InboxQueue
  const make = (actions = false) => emailWebhookConsole({ store: store(), auth: CREDENTIALS, actions })

  it('tells what a request-mode receiver with ordering recorded: events by id, an email by its facts and mark', {
    timeout: 60_000,
  }, async () => {
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: store(),
      ordering: true,
      logger: false,
      handlers: { 'email.complained': () => Promise.reject(new Error('complaint handler down')) },
    })
    const email = `req-${kind}`
    const queued = await deliver(receiver, 'email.queued', email, at(1))
    const submitted = await deliver(receiver, 'email.submitted', email, at(2))
    const bounced = await deliver(receiver, 'email.bounced', email, at(4))
    const accepted = await deliver(receiver, 'email.recipient_accepted', email, at(3))
    const complained = await deliver(receiver, 'email.complained', email, at(5))
    expect([queued, submitted, bounced, accepted, complained].map((d) => d.status)).toEqual([200, 200, 200, 200, 500])
    expect((await deliver(receiver, 'email.submitted', email, at(2), submitted.id)).status).toBe(200)
    const claim = await store().claim(`default:in-flight-${kind}`, { leaseMs: 60_000, retentionMs: 60_000 })
    expect(claim.status).toBe('acquired')
    const handler = make()
    expect(textOf((await get(handler, `/events/${submitted.id}`)).text)).toMatch(/handled, recorded as done at about \d{4}-\d\d-\d\d/)
    expect(textOf((await get(handler, `/events/${complained.id}`)).text)).toContain('not held: its last claim (attempt 1) was given back')
    expect(textOf((await get(handler, `/events/in-flight-${kind}`)).text)).toMatch(/in flight: a handler holds it \(attempt 1\) until/)
    expect(textOf((await get(handler, `/find?q=${submitted.id}`)).text)).toContain(`Event ${submitted.id}: handled`)
    const story = textOf((await get(handler, `/emails/${email}`)).text)
    // Four events recorded (the duplicate wrote nothing; the failed complaint is not recorded), in created_at order.
    const rows = [...story.matchAll(/(email\.[a-z_]+) (id not kept|[0-9a-f-]{36})( order mark)? recorded as done/g)].map(
      (m) => `${m[1]}${m[3] ? '*' : ''}`,
    )
    expect(rows).toEqual(['email.queued', 'email.submitted', 'email.recipient_accepted', 'email.bounced*'])
    expect(story).toContain(`Newest event recorded: email.bounced`)
    expect(story).toContain(bounced.id)
    expect(story).toMatch(/Message status bounced since email\.bounced/)
    expect(story).toContain('Folded 4 events recorded as done')
  })

  it('lists inbox entries of an email and retries its dead letter from the console: the worker handles it once', {
    timeout: 60_000,
  }, async () => {
    let failing = true
    const runs: string[] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: store(),
      ordering: true,
      mode: 'inbox',
      inbox: { maxAttempts: 1, pollMs: 50, retryBaseMs: 1 },
      logger: false,
      handlers: {
        'email.bounced': (event) => {
          runs.push(`${event.id}:${failing ? 'failed' : 'ok'}`)
          if (failing) throw new Error(`<b>bounce handler</b> failed for ${kind}`)
        },
      },
    })
    try {
      const email = `inbox-${kind}`
      const queued = await deliver(receiver, 'email.queued', email, at(10))
      const bounced = await deliver(receiver, 'email.bounced', email, at(11))
      await until(
        () => inbox().get(`default:${bounced.id}`),
        (e) => e?.state === 'dead',
        'the dead letter',
      )
      await until(
        () => inbox().get(`default:${queued.id}`),
        (e) => e?.state === 'done',
        'the queued event handled',
      )
      const handler = make(true)
      const story = textOf((await get(handler, `/emails/${email}`)).text)
      expect(story).toContain(`email.queued ${queued.id} order mark handled by the worker`)
      expect(story).toContain(
        `email.bounced ${bounced.id} dead letter: the worker gave up 1 Error: <b>bounce handler</b> failed for ${kind}`,
      )
      const dead = await get(handler, '/dead?type=email.bounced')
      expect(textOf(dead.text)).toContain(bounced.id)
      failing = false
      const answer = await post(handler, '/dead/retry', [['one', `default:${bounced.id}`]], formToken(dead.text, dead.response))
      expect(answer.location).toBe('/dead?retried=1')
      await until(
        () => inbox().get(`default:${bounced.id}`),
        (e) => e?.state === 'done',
        'the retried entry handled',
      )
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(runs).toEqual([`${bounced.id}:failed`, `${bounced.id}:ok`])
      expect(textOf((await get(handler, `/events/${bounced.id}`)).text)).toMatch(/handled, recorded as done .* State handled/)
    } finally {
      await receiver.inbox?.stop()
    }
  })

  it('pages through dead letters by type and date, newest first, and counts a plan exactly', { timeout: 60_000 }, async () => {
    const tag = `${kind}-page`
    const items = Array.from({ length: 70 }, (_, i) =>
      item(`${tag}-${String(i).padStart(2, '0')}`, i % 2 === 0 ? 'email.bounced' : `email.complained.${tag}`),
    )
    await deadEntries(inbox(), items, 'x')
    const handler = make()
    const type = `email.complained.${tag}`
    const seen: string[] = []
    let path: string | undefined = `/dead?type=${encodeURIComponent(type)}`
    for (let pages = 0; path !== undefined && pages < 5; pages++) {
      const text: string = (await get(handler, path)).text
      seen.push(...[...text.matchAll(new RegExp(`href="/events/(${tag}-\\d\\d)"`, 'g'))].map((m) => m[1] as string))
      path = /href="([^"]+)" rel="next"/.exec(text)?.[1]?.replace(/&amp;/g, '&')
    }
    expect(seen).toHaveLength(35)
    expect(new Set(seen).size).toBe(35)
    expect(seen.every((id) => Number(id.slice(-2)) % 2 === 1)).toBe(true)
    const plan = textOf((await get(handler, `/dead/plan?do=retry&type=${encodeURIComponent(type)}`)).text)
    expect(plan).toContain(`35 dead letters of type ${type}`)
    const past = textOf((await get(handler, `/dead?before=2000-01-01&type=${encodeURIComponent(type)}`)).text)
    expect(past).toContain('No entry matches')
  })

  it('shows the store on the overview', async () => {
    const text = textOf((await get(make(), '/')).text)
    if (kind === 'redis') expect(text).toContain('Keys in the database')
    else {
      expect(text).toMatch(/Events remembered as done \d+/)
      expect((await get(make(), '/')).text).toContain('<svg')
    }
  })
})

describe('a server that is down', () => {
  it.for(['postgres', 'redis'] as const)(
    '%s: every page says the store did not answer, and none fails',
    { timeout: 90_000 },
    async (kind) => {
      const server = kind === 'postgres' ? postgres : redis
      const handler = emailWebhookConsole({ store: stores[kind], auth: CREDENTIALS, storeTimeoutMs: 3_000 })
      await server.halt('crash')
      try {
        for (const path of ['/', '/find?q=x', '/dead', '/emails/x', '/events/x', '/dead/plan?do=retry']) {
          const { status, text } = await get(handler, path)
          expect(status, path).toBe(200)
          expect(textOf(text), path).toMatch(/The store did not answer/)
          expect(text).not.toContain(server.password)
        }
      } finally {
        await server.start()
      }
    },
  )
})
