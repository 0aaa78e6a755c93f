/**
 * The faithful sender example of the testing guide (docs/guides/testing-handlers.md), run as written (with a real
 * receiver: the Hono adapter on @hono/node-server and the memory store).
 */
import type { AddressInfo } from 'node:net'
import { MemoryDedupStore } from '@email-webhooks/core'
import { createWebhooksClient, recoverEndpoint } from '@email-webhooks/core/api'
import { createFaithfulSender, listenSender, TEST_API_KEY, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { expect, it } from 'vitest'

it('runs the example of the docs: deliver, then rehearse a recovery', async () => {
  const store = new MemoryDedupStore()
  const app = new Hono()
  app.post('/hooks', emailWebhook(TEST_SECRET, { 'email.bounced': () => {} }, { store }))
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
  })
  const port = (server.address() as AddressInfo).port
  try {
    // --- the docs' example ---
    const sender = createFaithfulSender({ timeScale: 0.001 })
    const { id } = sender.createEndpoint(`http://127.0.0.1:${port}/hooks`, { secret: TEST_SECRET })
    sender.emit({ type: 'email.bounced' })
    await sender.idle()
    expect(sender.deliveries(id)[0]?.last_status).toBe(200)

    const api = await listenSender(sender)
    const client = createWebhooksClient({ apiKey: TEST_API_KEY, baseUrl: api.baseUrl })
    const report = await recoverEndpoint({ client, endpointId: id, store })
    await api.close()
    sender.close()
    // --- end ---
    expect([report.enable, report.retried, report.alreadyHandled.map((h) => h.reason)]).toEqual(['already', [], ['delivered']])
  } finally {
    server.close()
  }
})
