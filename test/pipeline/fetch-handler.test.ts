import { emailWebhook, type FetchHandlerContext, type HandlerContext, MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, type SignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { describe, expect, it } from 'vitest'

const URL = 'https://receiver.example/hooks'

function post(delivery: SignedDelivery, init: RequestInit = {}): Request {
  return new Request(URL, { method: 'POST', headers: delivery.headers, body: delivery.body, ...init })
}

/** A body that arrives in `chunks` pieces of `size` bytes, with no content-length; counts how much was pulled. */
function streamingBody(chunks: number, size: number) {
  const state = { pulled: 0, cancelled: false }
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled === chunks) return controller.close()
      state.pulled++
      controller.enqueue(new Uint8Array(size).fill(0x61))
    },
    cancel() {
      state.cancelled = true
    },
  })
  return { stream, state }
}

describe('emailWebhook (fetch handler)', () => {
  it('answers a valid POST with a 200 JSON Response after the handler ran', async () => {
    const seen: string[] = []
    const handle = emailWebhook(
      TEST_SECRET,
      { 'email.bounced': (event) => void seen.push(event.data.id) },
      { store: new MemoryDedupStore() },
    )
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const response = await handle(post(delivery))
    expect(response).toBeInstanceOf(Response)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(await response.json()).toEqual({ ok: true })
    expect(seen).toEqual([delivery.event.data.id])

    const again = await handle(post(delivery))
    expect(await again.json()).toEqual({ ok: true, duplicate: true })
    expect(seen).toHaveLength(1)
  })

  it('accepts the body as bytes exactly as sent (a stream in several chunks verifies)', async () => {
    const handle = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore() })
    const delivery = await createSignedDelivery({ type: 'email.queued' })
    const bytes = new TextEncoder().encode(delivery.body)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 7) controller.enqueue(bytes.slice(at, at + 7))
        controller.close()
      },
    })
    const response = await handle(post(delivery, { body: stream, duplex: 'half' } as RequestInit))
    expect(response.status).toBe(200)
  })

  it.each(['GET', 'PUT', 'DELETE'])('answers %s with 405 and allow: POST, without running a handler', async (method) => {
    let handled = 0
    const handle = emailWebhook(TEST_SECRET, { 'email.bounced': () => void handled++ }, { store: new MemoryDedupStore() })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const response = await handle(
      new Request(URL, { method, headers: delivery.headers, ...(method === 'GET' ? {} : { body: delivery.body }) }),
    )
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('POST')
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed')
    expect(handled).toBe(0)
  })

  it('answers 413 from a content-length over maxBodyBytes without reading the body', async () => {
    const errors: string[] = []
    const handle = emailWebhook(
      TEST_SECRET,
      {},
      { store: new MemoryDedupStore(), maxBodyBytes: 64, onError: (error) => void errors.push(error.code) },
    )
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const { stream, state } = streamingBody(1_000, 1_024)
    const request = post(delivery, {
      headers: { ...delivery.headers, 'content-length': String(1_000 * 1_024) },
      body: stream,
      duplex: 'half',
    } as RequestInit)
    expect(request.headers.get('content-length')).toBe('1024000')
    const response = await handle(request)
    expect(response.status).toBe(413)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('body_too_large')
    expect(errors).toEqual(['body_too_large'])
    // Refused on the header: at most what the stream buffered ahead was pulled, and the body was cancelled.
    expect(state.pulled).toBeLessThanOrEqual(1)
    expect(state.cancelled).toBe(true)
  })

  it('answers 413 to a streamed body without content-length once it passes maxBodyBytes, and stops reading', async () => {
    const handle = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore(), maxBodyBytes: 10_000 })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const { stream, state } = streamingBody(1_000, 1_024)
    const request = post(delivery, { body: stream, duplex: 'half' } as RequestInit)
    expect(request.headers.get('content-length')).toBeNull()
    const response = await handle(request)
    expect(response.status).toBe(413)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('body_too_large')
    // 10 chunks of 1 KiB pass the 10,000-byte limit: reading stopped there, not at the end of the stream.
    expect(state.pulled).toBeGreaterThanOrEqual(10)
    expect(state.pulled).toBeLessThan(20)
    expect(state.cancelled).toBe(true)
  })

  it('accepts a valid delivery whose body is exactly maxBodyBytes long', async () => {
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const handle = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore(), maxBodyBytes: Buffer.byteLength(delivery.body) })
    expect((await handle(post(delivery))).status).toBe(200)
  })

  it('gives handlers, onEvent and onUnknown the Request in their context', async () => {
    const requests: Request[] = []
    const keep = (_event: unknown, ctx: HandlerContext & FetchHandlerContext) => void requests.push(ctx.request)
    const handle = emailWebhook(TEST_SECRET, { 'email.bounced': keep }, { store: new MemoryDedupStore(), onEvent: keep, onUnknown: keep })
    const known = post(await createSignedDelivery({ type: 'email.bounced' }))
    const unknown = post(await createSignedDelivery({ type: 'organization.updated' }))
    expect((await handle(known)).status).toBe(200)
    expect((await handle(unknown)).status).toBe(200)
    expect(requests).toEqual([known, known, unknown, unknown])
    expect(requests[0]).toBe(known)
    expect(requests[0]?.headers.get('webhook-id')).toBeTruthy()
  })

  it('answers 401 JSON to a tampered delivery', async () => {
    const handle = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore() })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const response = await handle(post(delivery, { body: delivery.body.replace('bounced', 'queued') }))
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: { code: 'signature_mismatch' } })
  })
})
