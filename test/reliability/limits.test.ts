/**
 * Limits over real listeners, for every adapter: bodies over `maxBodyBytes` refused while they
 * stream (chunked with no content-length, or announced by content-length) without the rest
 * being read first (every adapter but Lambda, whose event holds the whole body); oversized and repeated headers; `__proto__` and `constructor` keys inside a
 * signed envelope change no prototype. Hono's `c.req.json()` still works after the adapter read
 * the body.
 */
import net from 'node:net'
import { MemoryDedupStore, signWebhook, type WebhookEvent } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { afterAll, describe, expect, it } from 'vitest'
import { ADAPTERS, printTable, prototypeSnapshot, type RawRequest, type Receiver, STREAMING_ADAPTERS, startReceiver } from './support.js'

const LIMIT = 64 * 1024
const CHUNK = 16 * 1024
const MAX_SENT = 64 * 1024 * 1024

interface StreamResult {
  status: number
  text: string
  /** Body bytes the client had written when the first byte of the answer arrived. */
  writtenAtAnswer: number
  finishedBody: boolean
}

/**
 * Streams a signed head and an endless body in 16 KiB pieces (chunked, or raw after a large
 * content-length), waiting for the socket to drain, until the answer arrives or 64 MiB are out.
 */
function streamUntilAnswered(url: string, headers: Record<string, string>, mode: 'chunked' | 'content-length'): Promise<StreamResult> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname)
    const received: Buffer[] = []
    let written = 0
    let writtenAtAnswer = -1
    let finishedBody = false
    const timer = setTimeout(() => socket.destroy(new Error('no answer within 20 s')), 20_000)
    const finish = () => {
      clearTimeout(timer)
      const text = Buffer.concat(received).toString('latin1')
      const status = Number(text.slice(9, 12))
      resolve({ status, text: text.slice(text.indexOf('\r\n\r\n') + 4), writtenAtAnswer, finishedBody })
    }
    socket.on('data', (chunk) => {
      if (writtenAtAnswer < 0) writtenAtAnswer = written
      received.push(chunk)
      const text = Buffer.concat(received).toString('latin1')
      // One small JSON answer: done once the header block and a closing brace have arrived.
      if (text.includes('\r\n\r\n') && text.trimEnd().endsWith('}')) {
        socket.destroy()
        finish()
      }
    })
    socket.on('error', (error) => {
      // The server may close while we still write (Express answers 413 with connection: close).
      if (writtenAtAnswer >= 0) finish()
      else {
        clearTimeout(timer)
        reject(error)
      }
    })
    socket.on('close', () => {
      if (writtenAtAnswer >= 0) finish()
    })
    const head = [
      `POST ${new URL(url).pathname} HTTP/1.1`,
      `host: ${new URL(url).host}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      mode === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${MAX_SENT}`,
      '',
      '',
    ].join('\r\n')
    const piece = Buffer.alloc(CHUNK, 0x20)
    const framed = mode === 'chunked' ? Buffer.concat([Buffer.from(`${CHUNK.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece
    socket.once('connect', async () => {
      socket.write(head)
      const prefix = '{"id":"x","pad":"'
      socket.write(mode === 'chunked' ? `${prefix.length.toString(16)}\r\n${prefix}\r\n` : prefix)
      while (writtenAtAnswer < 0 && written < MAX_SENT && !socket.destroyed) {
        written += CHUNK
        if (!socket.write(framed)) await new Promise((r) => socket.once('drain', r))
      }
      if (writtenAtAnswer < 0 && !socket.destroyed) {
        finishedBody = true
        if (mode === 'chunked') socket.write('0\r\n\r\n')
      }
    })
  })
}

const figures: Record<string, string | number>[] = []
afterAll(() => printTable('Body limit while streaming (maxBodyBytes 64 KiB, client offers up to 64 MiB)', figures))

describe.each(ADAPTERS)('limits on %s', (name) => {
  async function start(handlers = {}, options = {}): Promise<Receiver> {
    return startReceiver(name, TEST_SECRET, handlers, { store: new MemoryDedupStore(), maxBodyBytes: LIMIT, ...options })
  }

  // A Lambda function gets the whole body in its event: the front (a function URL, API Gateway) buffers it.
  it.skipIf(!STREAMING_ADAPTERS.includes(name)).each(['chunked', 'content-length'] as const)(
    'answers 413 to an endless %s body after about maxBodyBytes, without reading the rest',
    async (mode) => {
      const errors: string[] = []
      const receiver = await start({}, { onError: (error: { code: string }) => void errors.push(error.code) })
      try {
        const { headers } = await createSignedDelivery()
        const result = await streamUntilAnswered(`${receiver.url}/hooks`, headers, mode)
        expect(result.status).toBe(413)
        expect(JSON.parse(result.text)).toMatchObject({ error: { code: 'body_too_large' } })
        expect(errors).toEqual(['body_too_large'])
        // The answer came while the client was still sending: the body was never read to its end.
        expect(result.finishedBody).toBe(false)
        // Socket buffers on both sides hold a few MiB at most; the whole offer was 64 MiB.
        expect(result.writtenAtAnswer).toBeLessThan(16 * 1024 * 1024)
        figures.push({
          adapter: name,
          body: mode,
          status: result.status,
          'KiB written when answered': Math.round(result.writtenAtAnswer / 1024),
        })
        // The listener still serves.
        const next = await createSignedDelivery()
        expect((await receiver.send(toRaw(next))).status).toBe(200)
      } finally {
        await receiver.close()
      }
    },
  )

  it('answers 431 to a 64 KiB header and keeps serving; accepts 500 small extra headers', async () => {
    const receiver = await start()
    try {
      const delivery = await createSignedDelivery()
      const huge = toRaw(delivery, [['x-huge', 'a'.repeat(64 * 1024)]])
      const answer = await receiver.send(huge).catch(() => ({ status: 0, text: '' }))
      // Node's HTTP parser refuses it (431) before any adapter code runs; a reset is also fine, never a 5xx.
      expect([431, 0]).toContain(answer.status)
      const many = toRaw(
        delivery,
        Array.from({ length: 500 }, (_, i): [string, string] => [`x-h${i}`, String(i)]),
      )
      expect((await receiver.send(many)).status).toBe(200)
    } finally {
      await receiver.close()
    }
  })

  it('refuses 200 copies of each webhook header with 401, and a header repeated with the same value', async () => {
    const receiver = await start()
    try {
      for (const header of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        const delivery = await createSignedDelivery()
        const copies = Array.from({ length: 200 }, (): [string, string] => [header, delivery.headers[header] as string])
        const raw = toRaw(delivery)
        raw.headers = raw.headers.filter(([key]) => key !== header).concat(copies)
        const many = await receiver.send(raw)
        expect([header, many.status]).toEqual([header, 401])
        raw.headers = raw.headers.filter(([key]) => key !== header).concat(copies.slice(0, 2))
        const twice = await receiver.send(raw)
        expect([header, twice.status]).toEqual([header, 401])
        expect(['malformed_id', 'malformed_timestamp', 'malformed_signature', 'duplicate_header']).toContain(
          JSON.parse(twice.text).error.code,
        )
      }
    } finally {
      await receiver.close()
    }
  })

  it('handles an envelope with __proto__ and constructor keys without changing any prototype', async () => {
    const before = prototypeSnapshot()
    const seen: WebhookEvent[] = []
    const receiver = await start({ 'email.bounced': (event: WebhookEvent) => void seen.push(event) })
    try {
      const id = crypto.randomUUID()
      const body = `{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"polluted":true}},"id":"${id}","type":"email.bounced","created_at":"2026-01-01T00:00:00Z","data":{"id":"e-1","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"nested":{"__proto__":{"polluted":true}}}}`
      // Signed as sent: a parsed-and-re-serialised object would lose the __proto__ keys.
      const signed = await signWebhook({ secret: TEST_SECRET, body, id })
      const exact = await receiver.send({ headers: Object.entries(signed.headers), body: new TextEncoder().encode(body) })
      expect(exact.status).toBe(200)
      const event = seen.at(-1) as WebhookEvent
      expect(event.id).toBe(id)
      expect(Object.hasOwn(event, '__proto__')).toBe(true)
      expect(Object.hasOwn(event.data, '__proto__')).toBe(true)
      expect(Object.getPrototypeOf(event)).toBe(Object.prototype)
      expect(Object.getPrototypeOf(event.data)).toBe(Object.prototype)
      expect((event as { isAdmin?: unknown }).isAdmin).toBeUndefined()
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
      expect(prototypeSnapshot()).toBe(before)
    } finally {
      await receiver.close()
    }
  })
})

describe('Hono adapter reading the body with the limit', () => {
  it('leaves c.req.json(), c.req.text() and c.req.arrayBuffer() working for a chunked body on @hono/node-server', async () => {
    const seen: unknown[] = []
    const app = new Hono()
    app.post(
      '/hooks',
      honoWebhook(
        TEST_SECRET,
        {
          'email.queued': async (_event, ctx) => {
            seen.push((await ctx.c.req.json()).type, (await ctx.c.req.text()).length, (await ctx.c.req.arrayBuffer()).byteLength)
          },
        },
        { store: new MemoryDedupStore() },
      ),
    )
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as import('node:http').Server
    await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())))
    try {
      const delivery = await createSignedDelivery({ type: 'email.queued' })
      const bytes = new TextEncoder().encode(delivery.body)
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 10) controller.enqueue(bytes.slice(at, at + 10))
          controller.close()
        },
      })
      const { port } = server.address() as import('node:net').AddressInfo
      const response = await fetch(`http://127.0.0.1:${port}/hooks`, {
        method: 'POST',
        headers: delivery.headers,
        body,
        duplex: 'half',
      } as RequestInit)
      expect(response.status).toBe(200)
      expect(seen).toEqual(['email.queued', bytes.length, bytes.length])
    } finally {
      server.close()
    }
  })
})

function toRaw(delivery: { headers: Record<string, string>; body: string }, extra: [string, string][] = []): RawRequest {
  return { headers: [...Object.entries(delivery.headers), ...extra], body: new TextEncoder().encode(delivery.body) }
}
