/**
 * Exactly once across the sender's deliveries and reconcile's: with `ordering: true` every store
 * counts, per email, type and `created_at` millisecond, the events handled and the reconciled ones
 * not yet matched by the sender's own delivery, atomically with the complete. A reconciled event
 * (its envelope carries `email_webhooks_reconcile: { index }`) runs only when it was not handled;
 * the sender's event runs only when reconcile did not bring it first. On every built-in store.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  createReceiver,
  type DedupStore,
  type EventSource,
  MemoryDedupStore,
  RECONCILE_FIELD,
  type Receiver,
  type WebhookEvent,
} from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgresAndRedis, type TestServer } from '../services/servers.js'
import { WithoutOrdering } from '../store/conformance-helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-facts-'))
let postgres: TestServer
let redis: TestServer
const stores: DedupStore[] = []
const keep = <S extends DedupStore>(store: S): S => {
  stores.push(store)
  return store
}
beforeAll(async () => {
  ;({ postgres, redis } = await sharedPostgresAndRedis())
}, 120_000)
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close?.()))
  await Promise.all([postgres?.stop(), redis?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

const STORES: { name: string; create(): DedupStore }[] = [
  { name: 'MemoryDedupStore', create: () => new MemoryDedupStore() },
  { name: 'SqliteDedupStore', create: () => keep(new SqliteDedupStore({ path: join(dir, 'facts.db') })) },
  { name: 'PostgresDedupStore', create: () => keep(new PostgresDedupStore({ connectionString: postgres.url, table: 'facts' })) },
  { name: 'RedisDedupStore', create: () => keep(new RedisDedupStore({ url: redis.url, prefix: 'facts:' })) },
]

type Run = { type: string; recipient: unknown; source: EventSource }

function receiverOn(store: DedupStore, runs: Run[], ordering = true): Receiver {
  const record = (event: WebhookEvent, ctx: { source: EventSource }) =>
    void runs.push({ type: event.type, recipient: (event.data as { recipient?: unknown }).recipient, source: ctx.source })
  return createReceiver({
    secret: TEST_SECRET,
    store,
    ordering,
    logger: false,
    handlers: { 'email.recipient_accepted': record, 'email.bounced': record, 'email.submitted': record },
  })
}

const at = (ms: number) => new Date(Date.UTC(2026, 10, 25, 6) + ms).toISOString()

/** One of the sender's own events. */
function sent(emailId: string, type: string, ms: number, data: Record<string, unknown> = {}): WebhookEvent {
  return { id: crypto.randomUUID(), type, created_at: at(ms), data: { ...data, id: emailId } }
}

/** The event reconcile builds for the `index`-th list entry of its type and time. */
function reconciled(emailId: string, type: string, ms: number, index: number, data: Record<string, unknown> = {}): WebhookEvent {
  return { ...sent(emailId, type, ms, data), [RECONCILE_FIELD]: { index } } as WebhookEvent
}

async function send(receiver: Receiver, event: WebhookEvent) {
  const answer = await receiver.receive(await createSignedDelivery({ event }))
  return [answer.status, answer.body] as const
}

const OK = [200, '{"ok":true}'] as const
const DUPLICATE = [200, '{"ok":true,"duplicate":true}'] as const

for (const { name, create } of STORES) {
  describe(`${name}: an event reconcile brings and the sender's own are handled once between them`, () => {
    it('runs a reconciled event the sender never delivered (ctx.source reconcile), and answers its later delivery by the sender as a duplicate', async () => {
      const runs: Run[] = []
      const receiver = receiverOn(create(), runs)
      const email = crypto.randomUUID()
      expect(await send(receiver, reconciled(email, 'email.bounced', 1_000, 0))).toEqual(OK)
      expect(await send(receiver, sent(email, 'email.bounced', 1_000))).toEqual(DUPLICATE)
      expect(runs).toEqual([{ type: 'email.bounced', recipient: undefined, source: 'reconcile' }])
    })

    it('answers a reconciled event as a duplicate when the sender delivered it first, and running reconcile again handles nothing', async () => {
      const runs: Run[] = []
      const receiver = receiverOn(create(), runs)
      const email = crypto.randomUUID()
      expect(await send(receiver, sent(email, 'email.submitted', 0))).toEqual(OK)
      expect(await send(receiver, reconciled(email, 'email.submitted', 0, 0))).toEqual(DUPLICATE)
      expect(await send(receiver, reconciled(email, 'email.bounced', 5_000, 0))).toEqual(OK)
      // The same reconcile again: the same envelopes (deterministic ids) and new ones alike are duplicates.
      expect(await send(receiver, reconciled(email, 'email.submitted', 0, 0))).toEqual(DUPLICATE)
      expect(await send(receiver, reconciled(email, 'email.bounced', 5_000, 0))).toEqual(DUPLICATE)
      expect(runs.map((run) => [run.type, run.source])).toEqual([
        ['email.submitted', 'sender'],
        ['email.bounced', 'reconcile'],
      ])
    })

    it('counts two events of one type in one millisecond apart: the one not delivered runs once, the other never twice', async () => {
      const runs: Run[] = []
      const receiver = receiverOn(create(), runs)
      const email = crypto.randomUUID()
      // Two recipients accepted in the same millisecond; the sender delivered bob's only.
      expect(await send(receiver, sent(email, 'email.recipient_accepted', 2_000, { recipient: 'bob@example.com' }))).toEqual(OK)
      // The email's event list has both: reconcile sends index 0 and 1 of that type and time.
      expect(await send(receiver, reconciled(email, 'email.recipient_accepted', 2_000, 0, { recipient: 'bob@example.com' }))).toEqual(
        DUPLICATE,
      )
      expect(await send(receiver, reconciled(email, 'email.recipient_accepted', 2_000, 1, { recipient: 'alice@example.com' }))).toEqual(OK)
      // The sender's own delivery of alice's event comes later (a retry after the endpoint came back).
      expect(await send(receiver, sent(email, 'email.recipient_accepted', 2_000, { recipient: 'alice@example.com' }))).toEqual(DUPLICATE)
      expect(runs.map((run) => [run.recipient, run.source])).toEqual([
        ['bob@example.com', 'sender'],
        ['alice@example.com', 'reconcile'],
      ])
    })
  })
}

describe('a reconciled event on a receiver that cannot recognise it', () => {
  it('is refused with 409 reconcile_unsupported and runs nothing: ordering off, a store without facts, a malformed field', async () => {
    const runs: Run[] = []
    const email = crypto.randomUUID()
    const cases: [Receiver, WebhookEvent, RegExp][] = [
      [receiverOn(new MemoryDedupStore(), runs, false), reconciled(email, 'email.bounced', 0, 0), /keeps no facts .*ordering: true/],
      [receiverOn(new WithoutOrdering(), runs), reconciled(email, 'email.bounced', 0, 0), /keeps no facts/],
      [
        receiverOn(new MemoryDedupStore(), runs),
        { ...sent(email, 'email.bounced', 0), [RECONCILE_FIELD]: { index: -1 } } as WebhookEvent,
        /field is not \{ index: a whole number/,
      ],
    ]
    for (const [receiver, event, why] of cases) {
      const answer = await receiver.receive(await createSignedDelivery({ event }))
      expect([answer.status, answer.code]).toEqual([409, 'reconcile_unsupported'])
      expect(JSON.parse(answer.body).error.message).toMatch(why)
      // Given back: nothing is recorded, a later acceptable delivery of the same id is not a duplicate.
      expect(await receiver.store().lookup?.(`default:${event.id}`)).toBe('absent')
    }
    expect(runs).toEqual([])
  })
})
