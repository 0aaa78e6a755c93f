/**
 * Every way an application mounts the receiver, behind one interface so that each behaviour
 * is written once: Express 5 (supertest and a real listener), Express 4, Hono (`app.request()`
 * and @hono/node-server) and core's fetch handler.
 */
import type { AddressInfo } from 'node:net'
import { type EmailEventHandlers, emailWebhook as fetchWebhook, type WebhookOptions } from '@email-webhooks/core'
import { captureRawBody, emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import express from 'express'
import express4 from 'express4'
import { Hono } from 'hono'
import request from 'supertest'

export interface Delivery {
  headers: Record<string, string>
  body: string | Uint8Array<ArrayBuffer>
}

export interface Answer {
  status: number
  headers: Headers
  text: string
  json: { ok?: boolean; duplicate?: boolean; ignored?: string; error?: { code: string; message: string } }
}

export interface Target {
  send(delivery: Delivery): Promise<Answer>
  close(): Promise<void>
}

// biome-ignore lint/suspicious/noExplicitAny: each adapter adds its own context; the suite only uses core's fields.
type AnyHandlers = EmailEventHandlers<any>
// biome-ignore lint/suspicious/noExplicitAny: as above.
type AnyOptions = WebhookOptions<any>

export interface TargetKind {
  name: string
  /** A JSON body parser runs before the webhook route: it answers non-JSON bodies itself (400, its own body). */
  jsonParserFirst?: boolean
  create(secret: string | string[], handlers: AnyHandlers, options: AnyOptions): Promise<Target>
}

async function answerOf(response: Response): Promise<Answer> {
  const text = await response.text()
  let json: Answer['json'] = {}
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: response.status, headers: response.headers, text, json }
}

async function listen(server: import('node:http').Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function fetchTarget(base: string, close: () => Promise<void>): Target {
  return {
    async send(delivery) {
      return answerOf(await fetch(`${base}/hooks`, { method: 'POST', headers: delivery.headers, body: delivery.body }))
    },
    close,
  }
}

function closeServer(server: import('node:http').Server): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections?.()
      server.close(() => resolve())
    })
}

export const express5Supertest: TargetKind = {
  name: 'Express 5 (supertest)',
  async create(secret, handlers, options) {
    const app = express()
    app.post('/hooks', expressWebhook(secret, handlers, options))
    return {
      async send(delivery) {
        const res = await request(app)
          .post('/hooks')
          .set(delivery.headers)
          .send(typeof delivery.body === 'string' ? delivery.body : Buffer.from(delivery.body))
        const headers = new Headers()
        for (const [k, v] of Object.entries(res.headers)) headers.set(k, String(v))
        return answerOf(new Response(res.text, { status: res.status, headers }))
      },
      close: async () => {},
    }
  },
}

function listenedExpress(
  name: string,
  factory: () => import('express').Express,
  prepare?: (app: import('express').Express) => void,
  jsonParserFirst = false,
): TargetKind {
  return {
    name,
    jsonParserFirst,
    async create(secret, handlers, options) {
      const app = factory()
      prepare?.(app)
      app.post('/hooks', expressWebhook(secret, handlers, options))
      const server = app.listen(0, '127.0.0.1')
      await new Promise<void>((resolve) => server.once('listening', () => resolve()))
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      return fetchTarget(base, closeServer(server))
    },
  }
}

export const express5Listen: TargetKind = listenedExpress('Express 5 (listen + fetch)', () => express())
export const express4Listen: TargetKind = listenedExpress(
  'Express 4 (listen + fetch)',
  () => express4() as unknown as import('express').Express,
)
export const express5CaptureRawBody: TargetKind = listenedExpress(
  'Express 5 with express.json({ verify: captureRawBody })',
  () => express(),
  (app) => app.use(express.json({ verify: captureRawBody, limit: '2mb' })),
  true,
)
export const express4RawParser: TargetKind = listenedExpress(
  'Express 4 with express.raw()',
  () => express4() as unknown as import('express').Express,
  (app) => app.use(express4.raw({ type: '*/*', limit: '2mb' }) as unknown as import('express').RequestHandler),
)

export const honoRequest: TargetKind = {
  name: 'Hono (app.request)',
  async create(secret, handlers, options) {
    const app = new Hono()
    app.post('/hooks', honoWebhook(secret, handlers, options))
    return {
      async send(delivery) {
        return answerOf(await app.request('/hooks', { method: 'POST', headers: delivery.headers, body: delivery.body }))
      },
      close: async () => {},
    }
  },
}

export const honoNodeServer: TargetKind = {
  name: 'Hono (@hono/node-server)',
  async create(secret, handlers, options) {
    const app = new Hono()
    app.post('/hooks', honoWebhook(secret, handlers, options))
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
    })
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    return fetchTarget(base, () => new Promise((resolve) => server.close(() => resolve())))
  },
}

export const fetchHandler: TargetKind = {
  name: "core's fetch handler",
  async create(secret, handlers, options) {
    const handle = fetchWebhook(secret, handlers, options)
    return {
      async send(delivery) {
        return answerOf(
          await handle(new Request('http://localhost/hooks', { method: 'POST', headers: delivery.headers, body: delivery.body })),
        )
      },
      close: async () => {},
    }
  },
}

export const ALL_TARGETS: TargetKind[] = [
  express5Supertest,
  express5Listen,
  express4Listen,
  express5CaptureRawBody,
  express4RawParser,
  honoRequest,
  honoNodeServer,
  fetchHandler,
]

export { listen }
