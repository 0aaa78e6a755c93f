/**
 * `store()` on the receiver and on every adapter's handler: the store deliveries are recorded in,
 * for admin scripts and recovery (lookup, recoverEndpoint).
 */
import { createReceiver, emailWebhook as fetchWebhook, MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { describe, expect, it } from 'vitest'

describe('store()', () => {
  it('gives the store a receiver records in, so an admin script can look an event up', async () => {
    const store = new MemoryDedupStore()
    const receiver = createReceiver({ secret: TEST_SECRET, store })
    expect(receiver.store()).toBe(store)
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const answer = await receiver.receive({ headers: delivery.headers, body: delivery.body })
    expect(answer.status).toBe(200)
    expect(await receiver.store().lookup?.(`default:${delivery.event.id}`)).toBe('done')
  })

  it('is on the handler of the fetch, Express and Hono adapters', () => {
    const store = new MemoryDedupStore()
    expect(fetchWebhook(TEST_SECRET, {}, { store }).store()).toBe(store)
    expect(expressWebhook(TEST_SECRET, {}, { store }).store()).toBe(store)
    expect(honoWebhook(TEST_SECRET, {}, { store }).store()).toBe(store)
    expect(honoWebhook(TEST_SECRET, {}, { store: 'memory' }).store()).toBeInstanceOf(MemoryDedupStore)
  })
})
