/**
 * examples/pg-boss against a real PostgreSQL: the Hono app (over @hono/node-server) answers 200
 * queued, a redelivery 200 duplicate, and the worker runs the bounce handler once, after a first
 * attempt that threw.
 */
import type { AddressInfo } from 'node:net'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { serve } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres, type TestServer } from '../../../test/services/servers.js'
import { createWebApp, startWorker } from '../src/app.ts'

let postgres: TestServer
beforeAll(async () => {
  postgres = await sharedPostgres()
})
afterAll(async () => {
  await postgres?.stop()
})

describe('examples/pg-boss', () => {
  it('queues each event once and the worker runs its handler once, retrying a failure', async () => {
    const web = await createWebApp(TEST_SECRET, postgres.url)
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: web.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
    })
    const tries: string[] = []
    const worker = await startWorker(postgres.url, {
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
      // pg-boss polls every 2 s and retries after 1–2 s.
      const deadline = Date.now() + 25_000
      while (tries.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(tries).toEqual([delivery.event.data.id, delivery.event.data.id])
    } finally {
      await new Promise((resolve) => server.close(resolve))
      await Promise.all([web.close(), worker.close()])
    }
  }, 40_000)
})
