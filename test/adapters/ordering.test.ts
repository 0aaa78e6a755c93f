/**
 * The ordering behaviours of the behaviour suite, run against every adapter (see targets.ts):
 * `ctx.order` for a late older event, `skipStale` with `onStale`, and `unknown` ordering for a store
 * without the capability and for events whose fields cannot be ordered. Real HTTP where the target
 * listens; the store is the in-process MemoryDedupStore (the other stores: test/ordering/receiver-stores.test.ts).
 */
import { createReceiver, type EmailEventType, type EventOrder, MemoryDedupStore, type WebhookEvent } from '@email-webhooks/core'
import { createEmailSequence, createEvent, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { WithoutOrdering } from '../store/conformance-helpers.js'
import { ALL_TARGETS, type Delivery, type Target } from './targets.js'

for (const kind of ALL_TARGETS) {
  describe(`${kind.name}: ordering`, () => {
    let target: Target | undefined
    afterEach(async () => {
      await target?.close()
      target = undefined
    })

    type Options = Parameters<typeof kind.create>[2]
    async function start({ handlersFor, ...options }: Options & { handlersFor?: EmailEventType[] } = {}) {
      const seen: { type: string; order: EventOrder }[] = []
      const record = (event: WebhookEvent, ctx: { order: EventOrder }) => void seen.push({ type: event.type, order: ctx.order })
      const types: EmailEventType[] = handlersFor ?? ['email.queued', 'email.deferred', 'email.submitted']
      const handlers = Object.fromEntries(types.map((type) => [type, record]))
      target = await kind.create(TEST_SECRET, handlers, { store: new MemoryDedupStore(), onUnknown: record, ordering: true, ...options })
      return { seen, send: (delivery: Delivery) => (target as Target).send(delivery) }
    }

    it('tells a late older event it is stale, naming the newest handled event; the answer is unchanged', async () => {
      const { seen, send } = await start()
      const { deliveries, events } = await createEmailSequence({ types: ['email.queued', 'email.deferred', 'email.submitted'] })
      const [queued, deferred, submitted] = deliveries as unknown as [Delivery, Delivery, Delivery]
      for (const delivery of [queued, submitted, deferred]) {
        const answer = await send(delivery)
        expect([answer.status, answer.json]).toEqual([200, { ok: true }])
      }
      const newest = events[2] as WebhookEvent
      expect(seen.map(({ type, order }) => [type, order.status])).toEqual([
        ['email.queued', 'first'],
        ['email.submitted', 'latest'],
        ['email.deferred', 'stale'],
      ])
      expect(seen[2]?.order).toEqual({
        status: 'stale',
        key: `email:${newest.data.id}`,
        newestHandled: { type: 'email.submitted', createdAtMs: Date.parse(newest.created_at), eventId: newest.id },
      })
    })

    it('skipStale acknowledges a stale event of a listed type without running a handler, records it, and onStale sees it', async () => {
      const stale: { type: string; newest: string | undefined }[] = []
      const { seen, send } = await start({
        skipStale: ['email.deferred'],
        onStale: (event: WebhookEvent, order: EventOrder) => void stale.push({ type: event.type, newest: order.newestHandled?.type }),
      })
      const { deliveries, events } = await createEmailSequence({ types: ['email.queued', 'email.deferred', 'email.submitted'] })
      const [queued, deferred, submitted] = deliveries as unknown as [Delivery, Delivery, Delivery]
      expect((await send(submitted)).json).toEqual({ ok: true })
      const skipped = await send(deferred)
      expect([skipped.status, skipped.json]).toEqual([200, { ok: true, skipped: 'stale' }])
      expect(stale).toEqual([{ type: 'email.deferred', newest: 'email.submitted' }])
      // Recorded as handled: its retry is a duplicate.
      const retry = await send(await createSignedDelivery({ event: events[1] as WebhookEvent }))
      expect([retry.status, retry.json]).toEqual([200, { ok: true, duplicate: true }])
      // A stale event of a type not listed still runs its handler.
      expect((await send(queued)).json).toEqual({ ok: true })
      expect(seen.map(({ type, order }) => [type, order.status])).toEqual([
        ['email.submitted', 'first'],
        ['email.queued', 'stale'],
      ])
    })

    it('never skips a fact: a late bounce of one recipient after another recipient was accepted runs its handler', async () => {
      const { seen, send } = await start({ skipStale: true, handlersFor: ['email.bounced', 'email.recipient_accepted'] })
      const { deliveries } = await createEmailSequence({
        types: [
          { type: 'email.bounced', recipient: 'alice@example.com' },
          { type: 'email.recipient_accepted', recipient: 'bob@example.com' },
        ],
      })
      const [aliceBounced, bobAccepted] = deliveries as unknown as [Delivery, Delivery]
      expect((await send(bobAccepted)).json).toEqual({ ok: true })
      const late = await send(aliceBounced)
      expect([late.status, late.json]).toEqual([200, { ok: true }])
      expect(seen.map(({ type, order }) => [type, order.status])).toEqual([
        ['email.recipient_accepted', 'first'],
        ['email.bounced', 'stale'],
      ])
    })

    it('skips a late message-state event only when the newer handled event sets the message state too', async () => {
      const { seen, send } = await start({ skipStale: true, handlersFor: ['email.submitted', 'email.recipient_accepted'] })
      const { deliveries } = await createEmailSequence({
        types: ['email.queued', 'email.submitted', { type: 'email.recipient_accepted', recipient: 'bob@example.com' }],
      })
      const [queued, submitted, accepted] = deliveries as unknown as [Delivery, Delivery, Delivery]
      expect((await send(accepted)).json).toEqual({ ok: true })
      // A recipient event replaces no message state: the late email.submitted still runs.
      expect((await send(submitted)).json).toEqual({ ok: true })
      const other = await createEmailSequence({ types: ['email.queued', 'email.submitted'] })
      expect((await send(other.deliveries[1] as Delivery)).json).toEqual({ ok: true })
      // email.submitted replaces email.queued: skipped.
      expect((await send(other.deliveries[0] as Delivery)).json).toEqual({ ok: true, skipped: 'stale' })
      expect((await send(queued)).json).toEqual({ ok: true })
      expect(seen.map(({ type, order }) => [type, order.status])).toEqual([
        ['email.recipient_accepted', 'first'],
        ['email.submitted', 'stale'],
        ['email.submitted', 'first'],
        // The first email's late queued stands behind a recipient event: answered { ok: true }, not
        // skipped (it has no handler here).
      ])
    })

    it('refuses skipStale for facts and onStale without skipStale when the receiver is built, saying why', async () => {
      const create = (options: Options) => kind.create(TEST_SECRET, {}, { store: new MemoryDedupStore(), ordering: true, ...options })
      // @ts-expect-error a bounce is a fact: not a type skipStale accepts
      await expect(create({ skipStale: ['email.bounced'] })).rejects.toThrow(/cannot skip email\.bounced: it is a fact/)
      // @ts-expect-error nor is a recipient event
      await expect(create({ skipStale: ['email.queued', 'email.recipient_deferred'] })).rejects.toThrow(/email\.recipient_deferred/)
      await expect(create({ onStale: () => {} })).rejects.toThrow(/onStale .* skipStale is not set/)
    })

    it('reports ordering unknown for a store without the capability, says so once when built, and dedup still works', async () => {
      const warnings: string[] = []
      const logger = { warn: (line: string) => void warnings.push(line), error: () => {} }
      const { seen, send } = await start({ store: new WithoutOrdering(), logger })
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/ordering: true, but this store \(WithoutOrdering\) keeps no order marks/)
      await expect(kind.create(TEST_SECRET, {}, { store: new WithoutOrdering(), ordering: true, skipStale: true })).rejects.toThrow(
        /skipStale needs a store that keeps order marks, and this store \(WithoutOrdering\)/,
      )
      const { deliveries } = await createEmailSequence({ types: ['email.queued', 'email.submitted'] })
      for (const delivery of [...deliveries].reverse()) expect((await send(delivery)).json).toEqual({ ok: true })
      expect((await send(deliveries[0] as Delivery)).json).toEqual({ ok: true, duplicate: true })
      expect(seen.map(({ order }) => order)).toEqual([
        { status: 'unknown', key: null, newestHandled: null, reason: 'store_without_ordering' },
        { status: 'unknown', key: null, newestHandled: null, reason: 'store_without_ordering' },
      ])
    })

    it('never fails a delivery for a bad created_at or a data.id that is not a string: ordering is unknown with the reason', async () => {
      const { seen, send } = await start({ skipStale: true })
      const cases: [Partial<WebhookEvent> & { type: string }, string][] = [
        [{ type: 'email.deferred', created_at: 'yesterday' }, 'created_at_unparseable'],
        [{ type: 'email.queued', created_at: '' }, 'created_at_missing'],
        [{ type: 'email.opened_in_the_future', data: { id: 42 } }, 'email_id_not_string'],
        [{ type: 'organization.updated', data: { id: 'org_1' } }, 'no_order_key'],
      ]
      for (const [fields, reason] of cases) {
        const event = { ...createEvent(fields.type), ...fields } as WebhookEvent
        const answer = await send(await createSignedDelivery({ event }))
        expect([fields.type, answer.status, answer.json]).toEqual([fields.type, 200, { ok: true }])
        expect(seen.at(-1)?.order).toMatchObject({ status: 'unknown', reason })
      }
      expect(seen).toHaveLength(cases.length)
    })

    it('is off by default: ctx.order is unknown (ordering_off), no mark is kept, and the order options need ordering: true', async () => {
      const store = new MemoryDedupStore()
      const { seen, send } = await start({ store, ordering: undefined })
      const { deliveries } = await createEmailSequence({ types: ['email.queued', 'email.submitted'] })
      const [queued, submitted] = deliveries as unknown as [Delivery, Delivery]
      expect((await send(submitted)).json).toEqual({ ok: true })
      expect(seen.map(({ order }) => order)).toEqual([{ status: 'unknown', key: null, newestHandled: null, reason: 'ordering_off' }])
      await target?.close()
      // The same store with ordering on: the first receiver left no mark, so the older event is `first`.
      const on = await start({ store })
      expect((await on.send(queued)).json).toEqual({ ok: true })
      expect(on.seen.map(({ order }) => order.status)).toEqual(['first'])
      for (const option of [{ skipStale: true }, { onStale: () => {} }, { orderKey: () => 'k' }] as const) {
        await expect(kind.create(TEST_SECRET, {}, { store: new MemoryDedupStore(), ...option })).rejects.toThrow(/needs ordering: true/)
      }
    })

    it('orders non-email events by the orderKey option', async () => {
      const { seen, send } = await start({ orderKey: (event: WebhookEvent) => `org:${(event.data as { id: string }).id}` })
      const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString()
      const newer = { ...createEvent('organization.updated'), created_at: at(5000), data: { id: 'org_1' } } as WebhookEvent
      const older = { ...createEvent('organization.updated'), created_at: at(1000), data: { id: 'org_1' } } as WebhookEvent
      for (const event of [newer, older]) expect((await send(await createSignedDelivery({ event }))).json).toEqual({ ok: true })
      expect(seen.map(({ order }) => [order.status, order.key])).toEqual([
        ['first', 'org:org_1'],
        ['stale', 'org:org_1'],
      ])
    })
  })
}

describe('a skipped event', () => {
  it('counts in stats().skipped with the outcome skipped, not as handled', async () => {
    const store = new MemoryDedupStore()
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      ordering: true,
      skipStale: ['email.deferred'],
      logger: false,
      handlers: { 'email.submitted': () => {} },
    })
    const { deliveries } = await createEmailSequence({ types: ['email.deferred', 'email.submitted'] })
    const [deferred, submitted] = deliveries as unknown as [Delivery, Delivery]
    expect((await receiver.receive(submitted)).outcome).toBe('handled')
    expect((await receiver.receive(deferred)).outcome).toBe('skipped')
    expect(receiver.stats()).toMatchObject({ handled: 1, skipped: 1 })
  })
})
