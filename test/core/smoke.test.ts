import { createReceiver, cryptoBackendName, verifyWebhook } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { describe, expect, it } from 'vitest'

describe('smoke', () => {
  it('verifies a signed delivery on the node path', async () => {
    const d = await createSignedDelivery({ type: 'email.bounced' })
    expect(cryptoBackendName()).toBe('node')
    await expect(verifyWebhook({ headers: d.headers, body: d.body, secret: TEST_SECRET })).resolves.toEqual({
      id: d.event.id,
      timestamp: expect.any(Number),
    })
  })
  it('runs a receiver with sqlite', async () => {
    const store = new SqliteDedupStore({ path: ':memory:' })
    let ran = 0
    const r = createReceiver({ secret: TEST_SECRET, store, handlers: { 'email.bounced': () => void ran++ } })
    const d = await createSignedDelivery({ type: 'email.bounced' })
    const a = await r.receive(d)
    const b = await r.receive(d)
    expect([a.status, a.body, b.status, b.body, ran]).toEqual([200, '{"ok":true}', 200, '{"ok":true,"duplicate":true}', 1])
  })
})
