// The testing kit's out-of-order sequences: signed deliveries of one email, and deterministic disorder.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { emailWebhook, foldEmailEvents, MemoryDedupStore, verifyWebhook, type WebhookEvent } from '@email-webhooks/core'
import {
  createEmailSequence,
  delayedOne,
  MAX_PERMUTATION_ITEMS,
  permutations,
  reversed,
  shuffled,
  TEST_SECRET,
} from '@email-webhooks/core/testing'
import { describe, expect, it } from 'vitest'

const LIFECYCLE = ['email.queued', 'email.deferred', 'email.submitted', 'email.recipient_accepted', 'email.complained']

describe('createEmailSequence', () => {
  it('builds one email’s events in lifecycle order, stepMs apart, each signed as the service does', async () => {
    const start = Date.UTC(2026, 0, 1)
    const { emailId, events, deliveries } = await createEmailSequence({ types: LIFECYCLE, start, stepMs: 250 })
    expect(events.map((e) => e.type)).toEqual(LIFECYCLE)
    expect(events.map((e) => Date.parse(e.created_at))).toEqual([0, 250, 500, 750, 1000].map((ms) => start + ms))
    expect(new Set(events.map((e) => e.id)).size).toBe(LIFECYCLE.length)
    for (const [index, delivery] of deliveries.entries()) {
      const event = events[index] as WebhookEvent
      expect(delivery.event).toBe(event)
      expect(event.data.id).toBe(emailId)
      const verified = await verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: TEST_SECRET })
      expect(verified.id).toBe(event.id)
      expect(JSON.parse(delivery.body)).toEqual(event)
    }
  })

  it('signs with the given secret and timestamp, independent of created_at', async () => {
    const timestamp = Math.floor(Date.now() / 1000) - 10
    const { deliveries } = await createEmailSequence({
      types: ['email.queued'],
      start: '2020-01-01T00:00:00Z',
      secret: 'whsec_other',
      timestamp,
    })
    const delivery = deliveries[0]!
    expect(delivery.headers['webhook-timestamp']).toBe(String(timestamp))
    await expect(verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: 'whsec_other' })).resolves.toMatchObject({
      timestamp,
    })
    await expect(verifyWebhook({ headers: delivery.headers, body: delivery.body, secret: TEST_SECRET })).rejects.toMatchObject({
      code: 'signature_mismatch',
    })
  })

  it('gives equal created_at with stepMs 0, and honours per-step offset, recipient, data and id', async () => {
    const { events } = await createEmailSequence({
      types: [
        'email.submitted',
        { type: 'email.bounced', recipient: 'a@x.test', data: { smtp: '550', id: 'ignored' }, offsetMs: -5, id: 'evt-b' },
        'email.deferred',
      ],
      start: new Date('2026-03-01T00:00:00.000Z'),
      stepMs: 0,
    })
    expect(events.map((e) => e.created_at)).toEqual(['2026-03-01T00:00:00.000Z', '2026-02-28T23:59:59.995Z', '2026-03-01T00:00:00.000Z'])
    expect(events[1]).toMatchObject({ id: 'evt-b', data: { recipient: 'a@x.test', smtp: '550', id: events[0]!.data.id } })
  })

  it('makes ids reproducible with a seed', async () => {
    const a = await createEmailSequence({ types: LIFECYCLE, seed: 7, start: 0 })
    const b = await createEmailSequence({ types: LIFECYCLE, seed: 7, start: 0 })
    const c = await createEmailSequence({ types: LIFECYCLE, seed: 8, start: 0 })
    expect(a.events).toEqual(b.events)
    expect(a.emailId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(c.emailId).not.toBe(a.emailId)
    expect(c.events.map((e) => e.id)).not.toEqual(a.events.map((e) => e.id))
  })

  it('refuses an invalid start or a negative stepMs', async () => {
    await expect(createEmailSequence({ types: ['email.queued'], start: 'soon' })).rejects.toThrow(TypeError)
    await expect(createEmailSequence({ types: ['email.queued'], stepMs: -1 })).rejects.toThrow(/stepMs/)
  })
})

describe('disorder helpers', () => {
  const items = ['a', 'b', 'c', 'd', 'e', 'f']

  it('shuffles deterministically per seed, into a permutation, without touching the input', () => {
    const copy = [...items]
    expect(shuffled(items, 1)).toEqual(shuffled(items, 1))
    expect([...shuffled(items, 1)].sort()).toEqual(items)
    expect(items).toEqual(copy)
    const orders = new Set(Array.from({ length: 20 }, (_, seed) => shuffled(items, seed).join('')))
    expect(orders.size).toBeGreaterThan(10)
  })

  it('reverses, and delays one item to the end or to a position', () => {
    expect(reversed(items)).toEqual(['f', 'e', 'd', 'c', 'b', 'a'])
    expect(delayedOne(items, 1)).toEqual(['a', 'c', 'd', 'e', 'f', 'b'])
    expect(delayedOne(items, 0, 2)).toEqual(['b', 'c', 'a', 'd', 'e', 'f'])
    expect(() => delayedOne(items, 6)).toThrow(RangeError)
    expect(() => delayedOne(items, 0, -1)).toThrow(RangeError)
    expect(() => delayedOne([], 0)).toThrow(RangeError)
  })

  it('lists every permutation once, up to MAX_PERMUTATION_ITEMS items', () => {
    expect(permutations([])).toEqual([[]])
    for (const n of [1, 2, 3, 4, 5]) {
      const all = permutations(items.slice(0, n))
      const factorial = Array.from({ length: n }, (_, i) => i + 1).reduce((a, b) => a * b, 1)
      expect(all).toHaveLength(factorial)
      expect(new Set(all.map((order) => order.join(''))).size).toBe(factorial)
    }
    expect(permutations(Array.from({ length: MAX_PERMUTATION_ITEMS }, (_, i) => i))).toHaveLength(40_320)
    expect(() => permutations(Array.from({ length: MAX_PERMUTATION_ITEMS + 1 }, (_, i) => i))).toThrow(RangeError)
  })
})

describe('a disordered sequence sent to a real receiver over HTTP', () => {
  it('is accepted in any order, and the handled events fold to the lifecycle state', async () => {
    const handled: WebhookEvent[] = []
    const newHandler = () => emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore(), onEvent: (event) => void handled.push(event) })
    let handler = newHandler()
    const server = createServer(async (req, res) => {
      const chunks: Buffer[] = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const headers = new Headers()
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value)
      const response = await handler(new Request('http://127.0.0.1/hooks', { method: 'POST', headers, body: Buffer.concat(chunks) }))
      res.writeHead(response.status, { 'content-type': 'application/json' }).end(await response.text())
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
      const sequence = await createEmailSequence({
        types: ['email.queued', 'email.deferred', 'email.submitted', { type: 'email.recipient_accepted', recipient: 'a@x.test' }],
        seed: 3,
      })
      const inOrder = foldEmailEvents(sequence.events).state
      expect(inOrder.status).toBe('submitted')
      for (const order of [reversed(sequence.deliveries), delayedOne(sequence.deliveries, 1), shuffled(sequence.deliveries, 99)]) {
        handled.length = 0
        handler = newHandler() // a fresh store: the same events again are not duplicates
        for (const { headers, body } of order) {
          const res = await fetch(url, { method: 'POST', headers, body })
          expect(res.status).toBe(200)
        }
        expect(handled.map((event) => event.id)).toEqual(order.map((delivery) => delivery.event.id))
        expect(foldEmailEvents(handled).state).toEqual(inOrder)
      }
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
