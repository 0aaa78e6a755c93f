/**
 * Shared parts of the reliability suites: the three receivers on real listeners on 127.0.0.1
 * (Express 5, Hono on @hono/node-server, core's fetch handler served by @hono/node-server), a raw HTTP client that
 * sends headers exactly as given (order, case, repeats), a collector of everything emitted,
 * and the summary tables the suites print.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { emailWebhook as fetchWebhook, type WebhookOptions } from '@email-webhooks/core'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import express from 'express'
import { Hono } from 'hono'

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

export type AdapterName = 'express' | 'hono' | 'fetch'
export const ADAPTERS: AdapterName[] = ['express', 'hono', 'fetch']

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
