/**
 * Shared parts of the reliability suites: the receivers on real listeners on 127.0.0.1
 * (Express 5, Hono on @hono/node-server, Fastify 5, Koa 3 with @koa/router, the Lambda handler
 * behind a function-URL stand-in, core's fetch handler served by @hono/node-server), a raw HTTP client that
 * sends headers exactly as given (order, case, repeats), a collector of everything emitted,
 * and the summary tables the suites print.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { emailWebhook as fetchWebhook, type WebhookOptions } from '@email-webhooks/core'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as fastifyWebhook } from '@email-webhooks/fastify'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { emailWebhook as koaWebhook } from '@email-webhooks/koa'
import { type EmailWebhookLambdaHandler, emailWebhook as lambdaWebhook } from '@email-webhooks/lambda'
import { serve } from '@hono/node-server'
import Router from '@koa/router'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import { lambdaContext } from '../adapters/lambda-events.js'

/** `RELIABILITY_LONG=1` scales every count and duration up. */
export const LONG = process.env.RELIABILITY_LONG === '1'

/** A raw request: headers as an ordered list of [name, value] (repeats kept), body as bytes. */
export interface RawRequest {
  method?: string
  headers: [string, string][]
  body: Uint8Array
}

export interface RawAnswer {
  status: number
  text: string
  headers: Record<string, string | string[] | undefined>
}

export type AdapterName = 'express' | 'hono' | 'fastify' | 'koa' | 'lambda' | 'fetch'
export const ADAPTERS: AdapterName[] = ['express', 'hono', 'fastify', 'koa', 'lambda', 'fetch']
/** The adapters that read the body stream themselves (Lambda gets the whole body in its event). */
export const STREAMING_ADAPTERS: AdapterName[] = ADAPTERS.filter((name) => name !== 'lambda')

// biome-ignore lint/suspicious/noExplicitAny: each adapter adds its own context; these suites only use core's fields.
export type AnyHandlers = Record<string, (event: any, ctx: any) => unknown>
// biome-ignore lint/suspicious/noExplicitAny: as above.
export type AnyOptions = WebhookOptions<any>

/** A receiver the suites send raw requests to; `health()` answers from the same process/listener. */
export interface Receiver {
  name: AdapterName
  url?: string
  send(request: RawRequest, timeoutMs?: number): Promise<RawAnswer>
  health(timeoutMs: number): Promise<number>
  close(): Promise<void>
}

const HEALTH_BODY = '{"ok":true}'
const TOO_LARGE_HEADERS = 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n'
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'

async function listen(server: http.Server): Promise<string> {
  if (!server.listening) await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Sends one request with http.request: headers exactly as listed, Host and Content-Length added unless given. */
export function rawSend(url: string, request: RawRequest, agent: http.Agent, timeoutMs = 10_000): Promise<RawAnswer> {
  const target = new URL(url)
  const names = new Set(request.headers.map(([name]) => name.toLowerCase()))
  const flat: string[] = []
  if (!names.has('host')) flat.push('host', target.host)
  for (const [name, value] of request.headers) flat.push(name, value)
  if (!names.has('content-length') && !names.has('transfer-encoding')) flat.push('content-length', String(request.body.byteLength))
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: request.method ?? 'POST', headers: flat, agent },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }))
        res.on('error', reject)
      },
    )
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end(request.body)
  })
}

function listenedReceiver(name: AdapterName, server: http.Server, url: string): Receiver {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
  const healthAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  return {
    name,
    url,
    send: (request, timeoutMs) => rawSend(`${url}/hooks`, request, agent, timeoutMs),
    async health(timeoutMs) {
      const started = performance.now()
      const answer = await rawSend(`${url}/health`, { method: 'GET', headers: [], body: new Uint8Array(0) }, healthAgent, timeoutMs)
      if (answer.status !== 200) throw new Error(`health answered ${answer.status}`)
      return performance.now() - started
    },
    close: () =>
      new Promise((resolve) => {
        agent.destroy()
        healthAgent.destroy()
        server.closeAllConnections?.()
        server.close(() => resolve())
      }),
  }
}

/** Starts one adapter with these handlers and options on a listener on 127.0.0.1. */
export async function startReceiver(name: AdapterName, secret: string, handlers: AnyHandlers, options: AnyOptions): Promise<Receiver> {
  if (name === 'express') {
    const app = express()
    app.get('/health', (_req, res) => void res.type('json').send(HEALTH_BODY))
    app.post('/hooks', expressWebhook(secret, handlers, options))
    const server = app.listen(0, '127.0.0.1')
    return listenedReceiver(name, server, await listen(server))
  }
  if (name === 'hono') {
    const app = new Hono()
    app.get('/health', (c) => c.body(HEALTH_BODY, 200, { 'content-type': 'application/json' }))
    app.post('/hooks', honoWebhook(secret, handlers, options))
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as http.Server
    return listenedReceiver(name, server, await listen(server))
  }
  if (name === 'fastify') {
    // Fastify's default answer to a malformed request or oversized headers (400/431, before any
    // route runs) leaves out `connection: close` while it closes the socket, so a keep-alive client
    // sends its next request into a dead socket; answer those the way Node's own handler does.
    const app = Fastify({
      clientErrorHandler: (error, socket) => {
        if (socket.writable) socket.end(error.code === 'HPE_HEADER_OVERFLOW' ? TOO_LARGE_HEADERS : BAD_REQUEST)
        else socket.destroy(error)
      },
    })
    app.get('/health', (_request, reply) => reply.type('application/json').send(HEALTH_BODY))
    await app.register(fastifyWebhook, { ...options, path: '/hooks', secret, handlers })
    await app.listen({ port: 0, host: '127.0.0.1' })
    return listenedReceiver(name, app.server, await listen(app.server))
  }
  if (name === 'koa') {
    const app = new Koa()
    // Koa's default error log prints a client that hung up mid-body ("Parse Error", from Node's HTTP
    // parser, on any route); apps silence that one as this does. Anything else is still printed.
    app.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'HPE_INVALID_EOF_STATE' && error.code !== 'ECONNRESET') console.error(error)
    })
    const router = new Router()
    router.get('/health', (ctx) => {
      ctx.type = 'application/json'
      ctx.body = HEALTH_BODY
    })
    router.post('/hooks', koaWebhook(secret, handlers, options))
    app.use(router.routes())
    const server = app.listen(0, '127.0.0.1')
    return listenedReceiver(name, server, await listen(server))
  }
  if (name === 'lambda') {
    const server = lambdaFunctionUrl(lambdaWebhook(secret, handlers, { store: 'memory', ...options })).listen(0, '127.0.0.1')
    return listenedReceiver(name, server, await listen(server))
  }
  // Core's fetch handler on a real listener: @hono/node-server turns Node requests into
  // web-standard Requests the way Bun.serve or Deno.serve would (repeated headers joined by ", ").
  const handle = fetchWebhook(secret, handlers, options)
  const server = serve({
    fetch: (request: Request) =>
      new URL(request.url).pathname === '/health'
        ? new Response(HEALTH_BODY, { headers: { 'content-type': 'application/json' } })
        : handle(request),
    port: 0,
    hostname: '127.0.0.1',
  }) as http.Server
  return listenedReceiver(name, server, await listen(server))
}

/** A function URL's payload limit: it answers 413 itself past 6 MB, without invoking the function. */
const FUNCTION_URL_MAX_BYTES = 6 * 1024 * 1024

/**
 * Stands in for a Lambda function URL on 127.0.0.1: reads the request (at most 6 MB), builds the
 * payload 2.0 event AWS sends (names lower-cased, repeats joined with commas, the body in base64),
 * invokes the handler and writes its result. GET /health answers without invoking it.
 */
function lambdaFunctionUrl(handler: EmailWebhookLambdaHandler): http.Server {
  return http.createServer(async (req, res) => {
    const path = req.url ?? '/'
    if (path === '/health') return void res.writeHead(200, { 'content-type': 'application/json' }).end(HEALTH_BODY)
    const chunks: Buffer[] = []
    let size = 0
    try {
      for await (const chunk of req) {
        size += (chunk as Buffer).length
        if (size > FUNCTION_URL_MAX_BYTES)
          return void res.writeHead(413, { connection: 'close' }).end('{"message":"Request Entity Too Large"}')
        chunks.push(chunk as Buffer)
      }
    } catch {
      return // the client hung up mid-body: the function is never invoked
    }
    const headers: Record<string, string> = {}
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = (req.rawHeaders[i] as string).toLowerCase()
      const value = req.rawHeaders[i + 1] as string
      headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`
    }
    const domainName = 'abcdefghijklmnopqrstuvwxyz123456.lambda-url.us-east-1.on.aws'
    const result = await handler(
      {
        version: '2.0',
        routeKey: '$default',
        rawPath: path,
        rawQueryString: '',
        headers,
        requestContext: {
          accountId: 'anonymous',
          apiId: 'abcdefghijklmnopqrstuvwxyz123456',
          domainName,
          domainPrefix: 'abcdefghijklmnopqrstuvwxyz123456',
          http: { method: req.method ?? 'GET', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: headers['user-agent'] ?? '' },
          requestId: crypto.randomUUID(),
          routeKey: '$default',
          stage: '$default',
          time: new Date().toUTCString(),
          timeEpoch: Date.now(),
        },
        body: Buffer.concat(chunks).toString('base64'),
        isBase64Encoded: true,
      },
      lambdaContext(),
    )
    res.writeHead(result.statusCode, result.headers).end(result.body)
  })
}

/** Everything printed to the console or to stdout/stderr while it is active. */
export function collectEmitted(): { text: () => string; stop: () => void } {
  const parts: string[] = []
  const record = (args: unknown[]) => {
    for (const arg of args) {
      if (arg instanceof Error) parts.push(`${arg.name}: ${arg.message}\n${arg.stack ?? ''}\n${String(arg.cause ?? '')}`)
      else if (typeof arg === 'string') parts.push(arg)
      else
        try {
          parts.push(JSON.stringify(arg))
        } catch {
          parts.push(String(arg))
        }
    }
  }
  const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const
  const saved = methods.map((method) => console[method])
  for (const method of methods) console[method] = (...args: unknown[]) => record(args)
  const writes = [process.stdout.write, process.stderr.write] as const
  const streams = [process.stdout, process.stderr] as const
  for (const stream of streams) {
    const original = stream.write
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      record([typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8')])
      return (original as (...a: unknown[]) => boolean).call(stream, chunk, ...rest)
    }) as typeof stream.write
  }
  return {
    text: () => parts.join('\n'),
    stop() {
      methods.forEach((method, index) => {
        console[method] = saved[index] as (typeof console)[typeof method]
      })
      streams.forEach((stream, index) => {
        stream.write = writes[index] as typeof stream.write
      })
    },
  }
}

/** Prints a compact table: one row per entry, columns from the keys of the first row. */
export function printTable(title: string, rows: Record<string, string | number>[]): void {
  const columns = Object.keys(rows[0] ?? {})
  const cell = (value: string | number | undefined) => (typeof value === 'number' ? value.toLocaleString('en-US') : (value ?? ''))
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => String(cell(row[column])).length)))
  const line = (values: string[]) => `| ${values.map((value, i) => value.padEnd(widths[i] as number)).join(' | ')} |`
  const out = [
    `\n${title}`,
    line(columns),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...rows.map((row) => line(columns.map((c) => String(cell(row[c]))))),
  ]
  console.log(out.join('\n'))
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Keys an object prototype should never gain, checked after runs that send `__proto__` and `constructor`. */
export function prototypeSnapshot(): string {
  return [Object.prototype, Array.prototype, Function.prototype, String.prototype]
    .map((proto) => Object.getOwnPropertyNames(proto).sort().join(','))
    .join('|')
}
