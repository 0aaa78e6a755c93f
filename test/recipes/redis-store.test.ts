// The Redis snippet of the Many instances page (docs/guides/many-instances.md), run as written behind the Express adapter.
import type { AddressInfo } from 'node:net'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/express'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedRedis, type TestServer } from '../services/servers.js'

let redis: TestServer
beforeAll(async () => {
  redis = await sharedRedis()
})
afterAll(async () => {
  await redis?.stop()
})

describe('docs recipe: RedisDedupStore', () => {
  it('deduplicates across two apps that build the store from REDIS_URL', async () => {
    process.env.REDIS_URL = redis.url
    const ran: string[] = []
    const apps = await Promise.all(
      [1, 2].map(async () => {
        // --- as in docs/guides/many-instances.md ---
        const { RedisDedupStore } = await import('@email-webhooks/core/redis')
        const store = new RedisDedupStore({ url: process.env.REDIS_URL })
        // ---
        const app = express()
        app.post('/hooks', emailWebhook(TEST_SECRET, { 'email.bounced': async (event) => void ran.push(event.id) }, { store }))
        const server = app.listen(0, '127.0.0.1')
        await new Promise((resolve) => server.once('listening', resolve))
        return { server, store, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` }
      }),
    )
    try {
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const answers = []
      for (const { url } of apps) answers.push(await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body }))
      expect(answers.map((answer) => answer.status)).toEqual([200, 200])
      expect(await answers[1]?.json()).toEqual({ ok: true, duplicate: true })
      expect(ran).toEqual([delivery.event.id])
    } finally {
      for (const { server, store } of apps) {
        server.closeAllConnections()
        server.close()
        await store.close()
      }
      delete process.env.REDIS_URL
    }
  })
})
