/**
 * What is particular to the Fastify plugin (the behaviour suite runs the rest): its raw-body parser
 * is scoped to the webhook route, so the app's own routes keep parsing JSON; every content type
 * reaches the receiver as the exact bytes; Fastify's bodyLimit refuses a large body with our 413;
 * handlers get `ctx.request` and a `ctx.reply` that cannot send; a bad `path` fails `register`.
 */
import { MemoryDedupStore, signWebhook } from '@email-webhooks/core'
import { createEvent, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook, type FastifyWebhookOptions } from '@email-webhooks/fastify'
import Fastify, { type FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'

let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

async function start(options: Partial<FastifyWebhookOptions> & { prefix?: string } = {}): Promise<FastifyInstance> {
  app = Fastify()
  app.post('/json', async (request) => ({ parsed: request.body }))
  await app.register(emailWebhook, { path: '/hooks', secret: TEST_SECRET, store: new MemoryDedupStore(), logger: false, ...options })
  return app
}

/** A signed body with a BOM and a stray invalid UTF-8 byte: only the exact bytes verify. */
async function oddBytes() {
  const event = createEvent('email.bounced')
  const json = new TextEncoder().encode(JSON.stringify(event).replace('"data":{', '"data":{"note":"X",'))
  const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...json])
  bytes[new TextDecoder().decode(json).indexOf('"X"') + 4] = 0xff
  const { headers } = await signWebhook({ secret: TEST_SECRET, body: bytes, id: event.id, timestamp: Math.floor(Date.now() / 1000) })
  return { headers, body: Buffer.from(bytes) }
}

describe('Fastify plugin', () => {
  it("keeps the app's JSON parsing on its other routes while the webhook route gets raw bytes", async () => {
    const fastify = await start()
    const json = await fastify.inject({ method: 'POST', url: '/json', payload: { a: 'é' } })
    expect(json.json()).toEqual({ parsed: { a: 'é' } })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const hook = await fastify.inject({ method: 'POST', url: '/hooks', headers: delivery.headers, payload: delivery.body })
    expect([hook.statusCode, hook.json()]).toEqual([200, { ok: true }])
  })

  for (const contentType of ['application/json', 'text/plain; charset=utf-8', 'application/octet-stream', undefined]) {
    it(`verifies the exact bytes (BOM, invalid UTF-8) sent as ${contentType ?? 'no content-type'}`, async () => {
      const fastify = await start()
      const { headers, body } = await oddBytes()
      const res = await fastify.inject({
        method: 'POST',
        url: '/hooks',
        headers: contentType ? { ...headers, 'content-type': contentType } : headers,
        payload: body,
      })
      expect([res.statusCode, res.json()]).toEqual([200, { ok: true }])
    })
  }

  it('answers 413 body_too_large from bodyLimit (set from maxBodyBytes), before the handler, and reports it', async () => {
    const errors: string[] = []
    const fastify = await start({ maxBodyBytes: 1000, onError: (error) => void errors.push(error.code) })
    const event = { ...createEvent('email.queued'), data: { id: 'x', pad: 'a'.repeat(2000) } }
    const delivery = await createSignedDelivery({ event })
    const res = await fastify.inject({ method: 'POST', url: '/hooks', headers: delivery.headers, payload: delivery.body })
    expect([res.statusCode, res.json().error.code, res.headers.connection]).toEqual([413, 'body_too_large', 'close'])
    expect(errors).toEqual(['body_too_large'])
    // Other routes keep Fastify's own limit (1 MiB by default).
    const json = await fastify.inject({ method: 'POST', url: '/json', payload: { pad: 'a'.repeat(2000) } })
    expect(json.statusCode).toBe(200)
  })

  it("leaves Fastify's other errors to the app's error handler", async () => {
    app = Fastify()
    app.setErrorHandler((error, _request, reply) => reply.code(418).send({ app: (error as { code?: string }).code }))
    app.addHook('preHandler', async (request) => {
      if (request.headers['x-fail']) throw Object.assign(new Error('from a hook'), { code: 'APP_HOOK' })
    })
    await app.register(emailWebhook, { path: '/hooks', secret: TEST_SECRET, store: new MemoryDedupStore() })
    const delivery = await createSignedDelivery()
    const res = await app.inject({ method: 'POST', url: '/hooks', headers: { ...delivery.headers, 'x-fail': '1' }, payload: delivery.body })
    expect([res.statusCode, res.json()]).toEqual([418, { app: 'APP_HOOK' }])
  })

  it('answers 500 raw_body_unavailable when a hook replaced request.body', async () => {
    app = Fastify()
    app.addHook('preHandler', async (request) => {
      request.body = JSON.parse(String(request.body))
    })
    await app.register(emailWebhook, { path: '/hooks', secret: TEST_SECRET, store: new MemoryDedupStore(), logger: false })
    const delivery = await createSignedDelivery()
    const res = await app.inject({ method: 'POST', url: '/hooks', headers: delivery.headers, payload: delivery.body })
    expect([res.statusCode, res.json().error.code]).toEqual([500, 'raw_body_unavailable'])
    expect(res.json().error.message).toContain('request.body')
  })

  it('gives handlers ctx.request and ctx.reply; reply.send() in a handler becomes 500 handler_failed, and the retry runs', async () => {
    const seen: string[] = []
    const fastify = await start({
      prefix: '/v1',
      handlers: {
        'email.queued': (_event, ctx) => {
          seen.push(`${ctx.request.method} ${ctx.request.url} attempt ${ctx.attempt}`)
          ctx.reply.header('x-handled-by', 'test')
          if (ctx.attempt === 1) ctx.reply.code(200).send('handled it myself')
        },
      },
    })
    const delivery = await createSignedDelivery()
    const first = await fastify.inject({ method: 'POST', url: '/v1/hooks', headers: delivery.headers, payload: delivery.body })
    expect([first.statusCode, first.json().error.code]).toEqual([500, 'handler_failed'])
    const again = await createSignedDelivery({ event: delivery.event })
    const second = await fastify.inject({ method: 'POST', url: '/v1/hooks', headers: again.headers, payload: again.body })
    expect([second.statusCode, second.body, second.headers['x-handled-by']]).toEqual([200, '{"ok":true}', 'test'])
    expect(seen).toEqual(['POST /v1/hooks attempt 1', 'POST /v1/hooks attempt 2'])
  })

  it('fails register() with a TypeError for a missing path or a bad secret', async () => {
    app = Fastify()
    // @ts-expect-error path is required
    await expect(app.register(emailWebhook, { secret: TEST_SECRET, store: 'memory' })).rejects.toThrow(/options\.path/)
    const other = Fastify()
    await expect(other.register(emailWebhook, { path: '/hooks', secret: ' padded' })).rejects.toThrow(/secret/)
    await other.close().catch(() => {})
  })
})
