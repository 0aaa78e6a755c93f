/**
 * Every way an application mounts the receiver, behind one interface so that each behaviour
 * is written once: Express 5 (supertest and a real listener), Express 4, Hono (`app.request()`
 * and @hono/node-server), Fastify 5 (`inject()` and a real listener), Koa 3 with @koa/router
 * (alone and behind @koa/bodyparser), Koa 2, AWS Lambda (recorded event shapes of every HTTP source)
 * and core's fetch handler.
 */
import type { AddressInfo } from 'node:net'
import { type EmailEventHandlers, emailWebhook as fetchWebhook, MemoryDedupStore, type WebhookOptions } from '@email-webhooks/core'
import { captureRawBody, emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as fastifyWebhook } from '@email-webhooks/fastify'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { emailWebhook as koaWebhook } from '@email-webhooks/koa'
import { type LambdaHttpResult, emailWebhook as lambdaWebhook } from '@email-webhooks/lambda'
import { serve } from '@hono/node-server'
import { bodyParser } from '@koa/bodyparser'
import Router from '@koa/router'
import express from 'express'
import express4 from 'express4'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import Koa2 from 'koa2'
import request from 'supertest'
import { type LambdaSource, lambdaContext, lambdaEvent } from './lambda-events.js'

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

export const fastifyInject: TargetKind = {
  name: 'Fastify 5 (inject)',
  async create(secret, handlers, options) {
    const app = Fastify()
    try {
      await app.register(fastifyWebhook, { ...options, path: '/hooks', secret, handlers })
    } catch (error) {
      await app.close()
      throw error
    }
    return {
      async send(delivery) {
        const res = await app.inject({ method: 'POST', url: '/hooks', headers: delivery.headers, payload: Buffer.from(delivery.body) })
        const headers = new Headers()
        for (const [k, v] of Object.entries(res.headers)) headers.set(k, String(v))
        return answerOf(new Response(res.body, { status: res.statusCode, headers }))
      },
      close: () => app.close(),
    }
  },
}

export const fastifyListen: TargetKind = {
  name: 'Fastify 5 beside JSON routes (listen + fetch)',
  async create(secret, handlers, options) {
    const app = Fastify()
    app.post('/json', async (req) => ({ parsed: req.body }))
    try {
      await app.register(fastifyWebhook, { ...options, path: '/hooks', secret, handlers })
    } catch (error) {
      await app.close()
      throw error
    }
    const base = await app.listen({ port: 0, host: '127.0.0.1' })
    return fetchTarget(base, () => app.close())
  },
}

function koaTarget(name: string, prepare?: (app: Koa) => void, Application: typeof Koa = Koa): TargetKind {
  return {
    name,
    jsonParserFirst: prepare !== undefined,
    async create(secret, handlers, options) {
      const app = new Application()
      prepare?.(app)
      const router = new Router()
      router.post('/hooks', koaWebhook(secret, handlers, options))
      app.use(router.routes())
      const server = app.listen(0, '127.0.0.1')
      return fetchTarget(await listen(server), closeServer(server))
    },
  }
}

export const koaRouter: TargetKind = koaTarget('Koa 3 with @koa/router (listen + fetch)')
export const koa2Router: TargetKind = koaTarget('Koa 2 with @koa/router (listen + fetch)', undefined, Koa2)
export const koaBodyParserFirst: TargetKind = koaTarget('Koa 3 with @koa/bodyparser first (ctx.request.rawBody)', (app) =>
  app.use(bodyParser({ jsonLimit: '2mb' })),
)

function lambdaTarget(source: LambdaSource, name: string): TargetKind {
  return {
    name,
    async create(secret, handlers, options) {
      const handler = lambdaWebhook(secret, handlers, { store: new MemoryDedupStore(), ...options })
      return {
        async send(delivery) {
          // REST APIs keep header names as the client sent them.
          const headers = source.startsWith('rest')
            ? Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k.replace(/(^|-)[a-z]/g, (c) => c.toUpperCase()), v]))
            : delivery.headers
          const result: LambdaHttpResult = await handler(lambdaEvent(source, headers, delivery.body), lambdaContext())
          const answerHeaders = new Headers()
          for (const [k, v] of Object.entries(result.headers ?? {})) answerHeaders.set(k, v)
          for (const [k, values] of Object.entries(result.multiValueHeaders ?? {})) for (const v of values) answerHeaders.append(k, v)
          return answerOf(new Response(result.body, { status: result.statusCode, headers: answerHeaders }))
        },
        close: async () => {},
      }
    },
  }
}

export const lambdaTargets: TargetKind[] = [
  lambdaTarget('rest', 'Lambda (API Gateway REST, payload 1.0)'),
  lambdaTarget('rest-binary', 'Lambda (API Gateway REST, binary media types: base64 body)'),
  lambdaTarget('http-api', 'Lambda (API Gateway HTTP API, payload 2.0)'),
  lambdaTarget('function-url', 'Lambda (function URL)'),
  lambdaTarget('alb', 'Lambda (ALB)'),
  lambdaTarget('alb-multi-value', 'Lambda (ALB, multi-value headers, base64 body)'),
]

export const ALL_TARGETS: TargetKind[] = [
  express5Supertest,
  express5Listen,
  express4Listen,
  express5CaptureRawBody,
  express4RawParser,
  honoRequest,
  honoNodeServer,
  fastifyInject,
  fastifyListen,
  koaRouter,
  koa2Router,
  koaBodyParserFirst,
  ...lambdaTargets,
  fetchHandler,
]

export { listen }
