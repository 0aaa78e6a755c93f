// How a user unit-tests their own webhook handlers: signed fixtures from
// @email-webhooks/core/testing, sent with supertest (Express) and app.request() (Hono).
import { MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, createTestClock, eventFixtures, TEST_SECRET } from '@email-webhooks/core/testing'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import { createExpressApp, createHonoApp } from '../src/handlers.js'

describe('my suppression handlers (Express, supertest)', () => {
  it('puts the email of a bounce on the suppression list', async () => {
    const suppressed = new Set<string>()
    const app = createExpressApp({ secret: TEST_SECRET, store: new MemoryDedupStore(), suppressed })
    const { headers, body, event } = await createSignedDelivery({ event: eventFixtures['email.bounced'] })
    const res = await request(app).post('/hooks').set(headers).send(body)
    expect(res.status).toBe(200)
    expect(suppressed.has(event.data.id as string)).toBe(true)
  })

  it('leaves a queued email off the suppression list', async () => {
    const suppressed = new Set<string>()
    const app = createExpressApp({ secret: TEST_SECRET, store: new MemoryDedupStore(), suppressed })
    const { headers, body } = await createSignedDelivery({ type: 'email.queued' })
    expect((await request(app).post('/hooks').set(headers).send(body)).status).toBe(200)
    expect(suppressed.size).toBe(0)
  })
})

describe('my suppression handlers (Hono, app.request)', () => {
  it('puts the email of a complaint on the suppression list', async () => {
    const suppressed = new Set<string>()
    const app = createHonoApp({ secret: TEST_SECRET, store: new MemoryDedupStore(), suppressed })
    const { headers, body, event } = await createSignedDelivery({ type: 'email.complained' })
    const res = await app.request('/hooks', { method: 'POST', headers, body })
    expect(res.status).toBe(200)
    expect([...suppressed]).toEqual([event.data.id])
  })

  it('refuses a delivery signed 6 minutes ago (controllable clock)', async () => {
    // The receiver reads this clock, so the test moves time instead of waiting or back-dating.
    const clock = createTestClock()
    const app = createHonoApp({ secret: TEST_SECRET, store: new MemoryDedupStore(), suppressed: new Set(), now: clock.now })
    const { headers, body } = await createSignedDelivery({ type: 'email.bounced', timestamp: clock.nowSeconds() })
    clock.advance(360_000)
    const res = await app.request('/hooks', { method: 'POST', headers, body })
    expect(res.status).toBe(401)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('timestamp_too_old')
    clock.advance(-120_000) // 4 minutes after signing: inside the ±300 s window again
    const retry = await app.request('/hooks', { method: 'POST', headers, body })
    expect(retry.status).toBe(200)
  })
})
