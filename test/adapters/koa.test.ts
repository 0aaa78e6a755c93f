/**
 * What is particular to the Koa middleware (the behaviour suite runs the rest): a body parser that
 * read the body and kept no raw bytes gets a 500 naming the parsers and the fixes, without hanging;
 * one that skipped the content type leaves the stream to the adapter; handlers get `ctx.koa`.
 */
import type { AddressInfo } from 'node:net'
import { MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/koa'
import { bodyParser } from '@koa/bodyparser'
import Router from '@koa/router'
import Koa from 'koa'
import { afterEach, describe, expect, it } from 'vitest'

let close: (() => void) | undefined
afterEach(() => {
  close?.()
  close = undefined
})

async function serve(app: Koa): Promise<string> {
  const server = app.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  close = () => {
    server.closeAllConnections()
    server.close()
  }
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function post(url: string, headers: Record<string, string>, body: string) {
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(5000) })
  return { status: res.status, json: (await res.json()) as { ok?: boolean; error?: { code: string; message: string } } }
}

describe('Koa middleware', () => {
  it('answers 500 raw_body_unavailable naming the body parsers and the fixes when one kept no raw bytes, without hanging', async () => {
    const app = new Koa()
    // A parser that reads the stream and keeps only the parsed object, as koa-body does by default.
    app.use(async (ctx, next) => {
      const chunks: Buffer[] = []
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
      ;(ctx.request as { body?: unknown }).body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      await next()
    })
    const router = new Router()
    router.post('/hooks', emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore(), logger: false }))
    app.use(router.routes())
    const base = await serve(app)
    const delivery = await createSignedDelivery()
    const { status, json } = await post(`${base}/hooks`, delivery.headers, delivery.body)
    expect([status, json.error?.code]).toEqual([500, 'raw_body_unavailable'])
    expect(json.error?.message).toMatch(/@koa\/bodyparser/)
    expect(json.error?.message).toMatch(/before the body parser/)
    expect(json.error?.message).toMatch(/includeUnparsed/)
  })

  it('reads the stream itself when @koa/bodyparser skipped the content type (body {}, no rawBody)', async () => {
    const app = new Koa()
    app.use(bodyParser())
    const router = new Router()
    router.post('/hooks', emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore() }))
    app.use(router.routes())
    const base = await serve(app)
    const delivery = await createSignedDelivery()
    const { status, json } = await post(`${base}/hooks`, { ...delivery.headers, 'content-type': 'application/octet-stream' }, delivery.body)
    expect([status, json]).toEqual([200, { ok: true }])
  })

  it('gives handlers ctx.koa (state, router params) and sets the JSON answer after them', async () => {
    const seen: string[] = []
    const app = new Koa<{ tenant: string }>()
    app.use(async (ctx, next) => {
      ctx.state.tenant = 'acme'
      await next()
    })
    const router = new Router<{ tenant: string }>()
    router.post(
      '/hooks/:endpoint',
      emailWebhook<{ tenant: string }>(
        TEST_SECRET,
        {
          'email.bounced': (event, ctx) => {
            seen.push(`${ctx.koa.state.tenant} ${(ctx.koa as unknown as { params: Record<string, string> }).params.endpoint} ${event.type}`)
            ctx.koa.body = 'ignored: the middleware answers'
          },
        },
        { store: new MemoryDedupStore() },
      ),
    )
    app.use(router.routes())
    const base = await serve(app)
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const res = await fetch(`${base}/hooks/primary`, { method: 'POST', headers: delivery.headers, body: delivery.body })
    expect([res.status, res.headers.get('content-type'), await res.text()]).toEqual([200, 'application/json', '{"ok":true}'])
    expect(seen).toEqual(['acme primary email.bounced'])
  })
})
