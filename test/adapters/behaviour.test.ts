/**
 * The behaviour suite: every behaviour written once and run against every adapter
 * (see targets.ts). Deliveries are signed fixtures sent over real HTTP where the target listens.
 */
import { EMAIL_EVENT_TYPES, type EmailEventType, MemoryDedupStore, type WebhookEvent } from '@email-webhooks/core'
import { createFixtureDeliveries, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { ALL_TARGETS, type Answer, type Delivery, type Target } from './targets.js'

const OTHER_SECRET = 'whsec_rotated_secret_for_behaviour_suite'

for (const kind of ALL_TARGETS) {
  describe(kind.name, () => {
    let target: Target | undefined
    const sent: { delivery: Delivery; answer: Answer }[] = []
    afterEach(async () => {
      await target?.close()
      target = undefined
      // No answer ever contains the secret, the signature or the body.
      for (const { delivery, answer } of sent.splice(0)) {
        const body = typeof delivery.body === 'string' ? delivery.body : new TextDecoder().decode(delivery.body)
        expect(answer.text).not.toContain(TEST_SECRET)
        expect(answer.text).not.toContain(OTHER_SECRET)
        const signature = delivery.headers['webhook-signature']
        if (signature && signature.length > 8) expect(answer.text).not.toContain(signature)
        if (body.length > 20) expect(answer.text).not.toContain(body)
      }
    })

    type Options = Parameters<typeof kind.create>[2]
    async function start(handlers: Parameters<typeof kind.create>[1] = {}, options: Options = {}, secret: string | string[] = TEST_SECRET) {
      target = await kind.create(secret, handlers, { store: new MemoryDedupStore(), ...options })
      return async (delivery: Delivery) => {
        const answer = await (target as Target).send(delivery)
        sent.push({ delivery, answer })
        return answer
      }
    }

    it('hands each of the 11 email event types to its typed handler exactly once', async () => {
      const seen: WebhookEvent[] = []
      const handlers = Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, (event: WebhookEvent) => void seen.push(event)]))
      const send = await start(handlers)
      for (const type of EMAIL_EVENT_TYPES) {
        const delivery = await createSignedDelivery({ type })
        const answer = await send(delivery)
        expect(answer.status, type).toBe(200)
        expect(answer.json).toEqual({ ok: true })
        expect(seen.at(-1)).toEqual(delivery.event)
      }
      expect(seen.map((event) => event.type)).toEqual([...EMAIL_EVENT_TYPES])
    })

    it('answers a duplicate 200 without running the handler again', async () => {
      let runs = 0
      const send = await start({ 'email.bounced': () => void runs++ })
      const first = await createSignedDelivery({ type: 'email.bounced' })
      expect((await send(first)).json).toEqual({ ok: true })
      // A retry carries a fresh timestamp and signature but the same webhook-id.
      const retry = await createSignedDelivery({ event: first.event })
      const answer = await send(retry)
      expect(answer.status).toBe(200)
      expect(answer.json).toEqual({ ok: true, duplicate: true })
      expect(runs).toBe(1)
    })

    it('acknowledges unknown and non-email event types with 200 after onUnknown runs', async () => {
      const unknown: string[] = []
      const send = await start({}, { onUnknown: (event: WebhookEvent) => void unknown.push(event.type) })
      for (const type of ['email.opened_in_the_future', 'organization.updated']) {
        const answer = await send(await createSignedDelivery({ type }))
        expect(answer.status, type).toBe(200)
      }
      expect(unknown).toEqual(['email.opened_in_the_future', 'organization.updated'])
    })

    it('refuses every rejection fixture with its status and code, and runs no handler', async () => {
      let runs = 0
      const handlers = Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, () => void runs++]))
      // The receiver's clock is pinned to the fixtures' "now", so a second ticking over cannot move a ±301 s case.
      const now = Math.floor(Date.now() / 1000)
      const send = await start(handlers, { now: () => now * 1000 })
      const fixtures = (await createFixtureDeliveries({ now })).filter((f) => f.expected.status !== 200)
      expect(fixtures.map((f) => f.name)).toEqual(
        expect.arrayContaining([
          'tampered_body',
          'wrong_secret',
          'stale_timestamp',
          'future_timestamp',
          'missing_webhook_id',
          'signed_not_json',
          'id_mismatch',
        ]),
      )
      for (const fixture of fixtures) {
        const answer = await send(fixture)
        // With express.json() first, body-parser itself answers a non-JSON body with 400 before our route runs.
        const code = kind.jsonParserFirst && fixture.name === 'signed_not_json' ? undefined : fixture.expected.code
        expect([fixture.name, answer.status, code && answer.json.error?.code]).toEqual([fixture.name, fixture.expected.status, code])
      }
      expect(runs).toBe(0)
    })

    it('answers 401 malformed_signature for 63 and 65 characters, non-hex and a v1, prefix', async () => {
      const send = await start()
      const good = await createSignedDelivery()
      const signature = good.headers['webhook-signature'] as string
      for (const bad of [signature.slice(1), `${signature}0`, `${signature.slice(1)}g`, `v1,${signature}`]) {
        const answer = await send({ ...good, headers: { ...good.headers, 'webhook-signature': bad } })
        expect([answer.status, answer.json.error?.code]).toEqual([401, 'malformed_signature'])
      }
    })

    it('answers 413 for a body over 1 MiB', async () => {
      const send = await start()
      const event = {
        id: crypto.randomUUID(),
        type: 'email.queued',
        created_at: new Date().toISOString(),
        data: { id: 'x', pad: 'a'.repeat(1024 * 1024) },
      }
      const answer = await send(await createSignedDelivery({ event }))
      expect([answer.status, answer.json.error?.code]).toEqual([413, 'body_too_large'])
    })

    it('answers 500 when a handler throws, and runs the handler again on the retry', async () => {
      const attempts: number[] = []
      const send = await start({
        'email.rejected': (_event: WebhookEvent, ctx: { attempt: number }) => {
          attempts.push(ctx.attempt)
          if (attempts.length === 1) throw new Error('database down')
        },
      })
      const delivery = await createSignedDelivery({ type: 'email.rejected' })
      const failed = await send(delivery)
      expect([failed.status, failed.json.error?.code]).toEqual([500, 'handler_failed'])
      expect(failed.text).not.toContain('database down')
      const retried = await send(await createSignedDelivery({ event: delivery.event }))
      expect(retried.status).toBe(200)
      expect(attempts).toEqual([1, 2])
    })

    it('runs the handler once for 20 concurrent copies; the others get 200 or 409 with Retry-After', async () => {
      let runs = 0
      const send = await start({
        'email.complained': async () => {
          runs++
          await new Promise((resolve) => setTimeout(resolve, 100))
        },
      })
      const delivery = await createSignedDelivery({ type: 'email.complained' })
      const answers = await Promise.all(Array.from({ length: 20 }, () => send(delivery)))
      expect(runs).toBe(1)
      for (const answer of answers) {
        expect([200, 409]).toContain(answer.status)
        if (answer.status === 409) expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
      }
      expect(answers.filter((a) => a.status === 200 && !a.json.duplicate)).toHaveLength(1)
    })

    it('accepts a delivery signed with any of several secrets (rotation)', async () => {
      const send = await start({}, {}, [TEST_SECRET, OTHER_SECRET])
      expect((await send(await createSignedDelivery({ secret: TEST_SECRET }))).status).toBe(200)
      expect((await send(await createSignedDelivery({ secret: OTHER_SECRET }))).status).toBe(200)
      const third = await send(await createSignedDelivery({ secret: 'whsec_some_third_secret' }))
      expect([third.status, third.json.error?.code]).toEqual([401, 'signature_mismatch'])
    })

    it('refuses a bad secret when the middleware is created', async () => {
      for (const bad of ['', ' whsec_padded', 'whsec_newline\n', [] as string[]]) {
        await expect(kind.create(bad, {}, {})).rejects.toThrow(/secret/)
      }
    })
  })
}

describe('Express with express.json() mounted before the webhook route', () => {
  it('answers 500 raw_body_unavailable naming express.json() and both fixes, without hanging', async () => {
    const app = express()
    app.use(express.json())
    app.post('/hooks', expressWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore() }))
    const server = app.listen(0, '127.0.0.1')
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    try {
      const { port } = server.address() as import('node:net').AddressInfo
      const delivery = await createSignedDelivery()
      const res = await fetch(`http://127.0.0.1:${port}/hooks`, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
        signal: AbortSignal.timeout(5000),
      })
      const json = (await res.json()) as { error: { code: string; message: string } }
      expect(res.status).toBe(500)
      expect(json.error.code).toBe('raw_body_unavailable')
      expect(json.error.message).toContain('express.json()')
      expect(json.error.message).toContain('captureRawBody')
      expect(json.error.message).toMatch(/before express\.json\(\)/)
    } finally {
      server.close()
    }
  })
})

describe('adapter handler context', () => {
  it('gives Express handlers req and res, and Hono handlers c with a still-readable body', async () => {
    const seen: string[] = []
    const type: EmailEventType = 'email.queued'
    const { Hono } = await import('hono')
    const app = new Hono()
    app.post(
      '/hooks',
      honoWebhook(
        TEST_SECRET,
        { [type]: async (_event, ctx) => void seen.push(`hono:${(await ctx.c.req.json()).type}`) },
        { store: new MemoryDedupStore() },
      ),
    )
    const delivery = await createSignedDelivery({ type })
    expect((await app.request('/hooks', { method: 'POST', headers: delivery.headers, body: delivery.body })).status).toBe(200)
    const exp = express()
    exp.post(
      '/hooks',
      expressWebhook(
        TEST_SECRET,
        { [type]: (_event, ctx) => void seen.push(`express:${ctx.req.method}`) },
        { store: new MemoryDedupStore() },
      ),
    )
    const request = (await import('supertest')).default
    const res = await request(exp).post('/hooks').set(delivery.headers).send(delivery.body)
    expect(res.status).toBe(200)
    expect(seen).toEqual(['hono:email.queued', 'express:POST'])
  })
})
