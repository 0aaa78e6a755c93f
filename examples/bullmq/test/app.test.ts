/**
 * examples/bullmq against a real Redis: the web app answers 200 queued, a redelivery 200 duplicate,
 * and the worker runs the bounce handler once, after a first attempt that threw.
 */
import type { AddressInfo } from 'node:net'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedRedis, type TestServer } from '../../../test/services/servers.js'
import { createWebApp, startWorker } from '../src/app.ts'

let redis: TestServer
beforeAll(async () => {
  redis = await sharedRedis()
})
afterAll(async () => {
  await redis?.stop()
})

describe('examples/bullmq', () => {
  it('queues each event once and the worker runs its handler once, retrying a failure', async () => {
    const web = createWebApp(TEST_SECRET, redis.url)
    const server = web.app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    const tries: string[] = []
    const worker = startWorker(redis.url, {
      'email.bounced': async (event) => {
        tries.push(event.data.id)
        if (tries.length === 1) throw new Error('the mail database is down')
      },
    })
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const send = async () => (await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body })).json()
      expect(await send()).toEqual({ ok: true, queued: true })
      expect(await send()).toEqual({ ok: true, duplicate: true })
      const deadline = Date.now() + 20_000
      while (tries.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(tries).toEqual([delivery.event.data.id, delivery.event.data.id])
    } finally {
      server.closeAllConnections()
      server.close()
      await Promise.all([web.close(), worker.close()])
    }
  })
})
