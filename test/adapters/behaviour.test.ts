/**
 * The behaviour suite: every behaviour written once and run against every adapter
 * (see targets.ts). Deliveries are signed fixtures sent over real HTTP where the target listens.
 */
import { EMAIL_EVENT_TYPES, type EmailEventType, MemoryDedupStore, signWebhook, type WebhookEvent } from '@email-webhooks/core'
import { createEvent, createFixtureDeliveries, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
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
      const fixtures = (await createFixtureDeliveries({ now })).filter((f) => f.expected.code !== undefined)
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
        // With express.json() first, body-parser itself answers a non-JSON body with 400 before our route runs.
        if (kind.jsonParserFirst && fixture.name === 'signed_not_json') continue
        const answer = await send(fixture)
        const code = fixture.expected.status === 200 ? answer.json.ignored : answer.json.error?.code
        expect([fixture.name, answer.status, code]).toEqual([fixture.name, fixture.expected.status, fixture.expected.code])
      }
      expect(runs).toBe(0)
    })

    it('acknowledges (200) a signed envelope that fails validation, once, so the sender stops resending it, and reports it', async () => {
      const reports: string[] = []
      let runs = 0
      const send = await start(
        { 'email.bounced': () => void runs++ },
        { onError: (error: { code: string }) => void reports.push(error.code) },
      )
      const event = { ...createEvent('email.bounced'), data: { reason: 'no id' } }
      const delivery = await createSignedDelivery({ event })
      const first = await send(delivery)
      expect([first.status, first.json]).toEqual([200, { ok: true, ignored: 'invalid_envelope' }])
      const resent = await send(await createSignedDelivery({ event }))
      expect([resent.status, resent.json]).toEqual([200, { ok: true, duplicate: true }])
      expect([runs, reports]).toEqual([0, ['invalid_envelope']])
    })

    it('answers 503 at the handler deadline, 409 in_flight to a retry while the first run goes on, and a duplicate 200 once it finished', async () => {
      let release = () => {}
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      let runs = 0
      const send = await start(
        {
          'email.deferred': async () => {
            runs++
            await held // ignores ctx.signal, like a database write already in flight
          },
        },
        { handlerTimeoutMs: 150, logger: false },
      )
      const delivery = await createSignedDelivery({ type: 'email.deferred' })
      const first = await send(delivery)
      expect([first.status, first.json.error?.code]).toEqual([503, 'handler_timeout'])
      const retry = await send(await createSignedDelivery({ event: delivery.event }))
      expect([retry.status, retry.json.error?.code]).toEqual([409, 'in_flight'])
      expect(Number(retry.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
      expect(runs).toBe(1)
      release()
      await new Promise((resolve) => setTimeout(resolve, 20))
      const later = await send(await createSignedDelivery({ event: delivery.event }))
      expect([later.status, later.json]).toEqual([200, { ok: true, duplicate: true }])
      expect(runs).toBe(1)
    })

    it('accepts an upper-case hex signature (the same MAC; see the Sender contract page of the docs) and says when the signature header is empty', async () => {
      const send = await start()
      const good = await createSignedDelivery()
      const upper = await send({
        ...good,
        headers: { ...good.headers, 'webhook-signature': good.headers['webhook-signature']!.toUpperCase() },
      })
      expect(upper.status).toBe(200)
      const empty = await send({ ...(await createSignedDelivery()), headers: { ...good.headers, 'webhook-signature': '' } })
      expect(empty.status).toBe(401)
      expect(empty.json.error?.message).toMatch(/empty/)
      expect(empty.json.error?.message).not.toMatch(/missing/)
    })

    it('says that a timestamp in milliseconds looks like milliseconds (not a clock problem)', async () => {
      const send = await start()
      const delivery = await createSignedDelivery({ timestamp: Date.now() })
      const answer = await send(delivery)
      expect([answer.status, answer.json.error?.code]).toEqual([401, 'timestamp_too_new'])
      expect(answer.json.error?.message).toMatch(/looks like milliseconds/)
      expect(answer.json.error?.message).not.toMatch(/NTP/)
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

    it('in inbox mode answers 200 queued, runs the handler once after the answer, and answers a redelivery as a duplicate', async () => {
      const store = new MemoryDedupStore()
      const seen: string[] = []
      let release = () => {}
      const gate = new Promise<void>((resolve) => {
        release = resolve
      })
      const send = await start(
        {
          'email.bounced': async (event: WebhookEvent) => {
            await gate
            seen.push(event.id)
          },
        },
        { store, mode: 'inbox' },
      )
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const answer = await send(delivery)
      expect([answer.status, answer.json]).toEqual([200, { ok: true, queued: true }])
      expect(seen).toEqual([])
      release()
      for (let i = 0; i < 500 && seen.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
      const again = await send(delivery)
      expect([again.status, again.json]).toEqual([200, { ok: true, duplicate: true }])
      expect(seen).toEqual([delivery.event.id])
      expect(await store.inbox.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 })
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
    const errors: string[] = []
    const logger = { error: (line: string) => void errors.push(line), warn: () => {} }
    app.post('/hooks', expressWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore(), logger }))
    const server = app.listen(0, '127.0.0.1')
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    try {
      const { port } = server.address() as import('node:net').AddressInfo
      for (let i = 0; i < 3; i++) {
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
      }
      // The same set-up mistake for every request: logged once (at most every 10 minutes), so that
      // unsigned requests cannot flood the log.
      expect(errors).toHaveLength(1)
      expect(errors[0]).toContain('raw_body_unavailable')
      expect(errors[0]).toContain('Said at most every 10 minutes')
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

describe('Hono with a middleware that read the body before the webhook route', () => {
  /** A signed body with a stray invalid UTF-8 byte and a BOM: text decoding cannot give these bytes back. */
  async function oddBytes() {
    const event = createEvent('email.bounced')
    const json = new TextEncoder().encode(JSON.stringify(event).replace('"data":{', '"data":{"note":"X",'))
    const at = new TextDecoder().decode(json).indexOf('"X"') + 1
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...json])
    bytes[at + 3] = 0xff
    const { headers } = await signWebhook({ secret: TEST_SECRET, body: bytes, id: event.id, timestamp: Math.floor(Date.now() / 1000) })
    return { headers, body: bytes }
  }

  async function appWith(read: 'text' | 'json' | 'arrayBuffer' | 'blob') {
    const { Hono } = await import('hono')
    const app = new Hono()
    app.use('/hooks', async (c, next) => {
      await c.req[read]().catch(() => undefined)
      await next()
    })
    app.post('/hooks', honoWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore(), logger: false }))
    return app
  }

  for (const read of ['text', 'json'] as const) {
    it(`answers 500 raw_body_unavailable naming the fix after c.req.${read}(), instead of verifying re-encoded text`, async () => {
      const app = await appWith(read)
      const { headers, body } = await oddBytes()
      const res = await app.request('/hooks', { method: 'POST', headers, body })
      const json = (await res.json()) as { error: { code: string; message: string } }
      expect([res.status, json.error.code]).toEqual([500, 'raw_body_unavailable'])
      expect(json.error.message).toContain(`c.req.${read}()`)
      expect(json.error.message).toContain('c.req.arrayBuffer()')
    })
  }

  for (const read of ['arrayBuffer', 'blob'] as const) {
    it(`verifies the exact bytes (invalid UTF-8, BOM) when an earlier middleware called c.req.${read}()`, async () => {
      const app = await appWith(read)
      const { headers, body } = await oddBytes()
      const res = await app.request('/hooks', { method: 'POST', headers, body })
      expect(res.status).toBe(200)
    })
  }

  it('answers through @hono/node-server with the same status, headers and body as app.request()', async () => {
    const { Hono } = await import('hono')
    const { serve } = await import('@hono/node-server')
    const app = new Hono()
    app.post('/hooks', honoWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore() }))
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
    })
    try {
      const { port } = server.address() as import('node:net').AddressInfo
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const res = await fetch(`http://127.0.0.1:${port}/hooks`, { method: 'POST', headers: delivery.headers, body: delivery.body })
      expect([res.status, res.headers.get('content-type'), await res.text()]).toEqual([200, 'application/json', '{"ok":true}'])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('Express handlers cannot send the answer themselves', () => {
  it('turns ctx.res.status(200).send() in a handler into 500 handler_failed (no early 2xx, no ERR_HTTP_HEADERS_SENT), and the retry runs', async () => {
    const causes: string[] = []
    const attempts: number[] = []
    const app = express()
    app.post(
      '/hooks',
      expressWebhook(
        TEST_SECRET,
        {
          'email.queued': (_event, ctx) => {
            attempts.push(ctx.attempt)
            ctx.res.locals.seen = true
            ctx.res.setHeader('x-handled-by', 'test')
            if (ctx.attempt === 1) ctx.res.status(200).send('handled it myself')
          },
        },
        { store: new MemoryDedupStore(), onError: (error) => void causes.push(String((error.cause as Error)?.message)) },
      ),
    )
    const server = app.listen(0, '127.0.0.1')
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    try {
      const { port } = server.address() as import('node:net').AddressInfo
      const delivery = await createSignedDelivery()
      const post = (d: typeof delivery) => fetch(`http://127.0.0.1:${port}/hooks`, { method: 'POST', headers: d.headers, body: d.body })
      const first = await post(delivery)
      const json = (await first.json()) as { error: { code: string } }
      expect([first.status, json.error.code]).toEqual([500, 'handler_failed'])
      expect(causes[0]).toMatch(/ctx\.res\.send\(\) was called in a webhook handler/)
      const retried = await post(await createSignedDelivery({ event: delivery.event }))
      expect([retried.status, await retried.text(), retried.headers.get('x-handled-by')]).toEqual([200, '{"ok":true}', 'test'])
      expect(attempts).toEqual([1, 2])
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})
