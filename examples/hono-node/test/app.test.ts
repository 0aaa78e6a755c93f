import type { AddressInfo } from 'node:net'
import { MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { serve } from '@hono/node-server'
import { describe, expect, it } from 'vitest'
import { createApp } from '../src/app.js'

describe('examples/hono-node', () => {
  it('handles a bounce once over a real @hono/node-server listener', async () => {
    const bounced: string[] = []
    const app = createApp({ secret: TEST_SECRET, store: new MemoryDedupStore(), markBounced: (id: string) => void bounced.push(id) })
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
    })
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const first = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body })
      const second = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body })
      expect([first.status, second.status]).toEqual([200, 200])
      expect(await second.json()).toEqual({ ok: true, duplicate: true })
      expect(bounced).toEqual([delivery.event.data.id])
    } finally {
      server.close()
    }
  })

  it('refuses a tampered delivery with 401', async () => {
    const app = createApp({ secret: TEST_SECRET, store: new MemoryDedupStore(), markBounced: () => {} })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const res = await app.request('/hooks', { method: 'POST', headers: delivery.headers, body: delivery.body.replace('bounced', 'queued') })
    expect(res.status).toBe(401)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('signature_mismatch')
  })
})
