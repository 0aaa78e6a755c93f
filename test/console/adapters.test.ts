/**
 * The console mounted by each adapter on a real server: Express (`app.use(path, …)`), Hono
 * (`app.all(path + '/*', …)` on @hono/node-server), Fastify (a plugin under its register prefix)
 * and Koa (middleware with `basePath`). Each serves the console only under its path, with links
 * and the stylesheet under it, asks for credentials, takes a same-origin POST with its token, and
 * leaves the app's other routes alone; a body parser mounted first does not break its forms.
 */

import { mkdtempSync, rmSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { emailWebhookConsole as expressConsole } from '@email-webhooks/express'
import { emailWebhookConsole as fastifyConsole } from '@email-webhooks/fastify'
import { emailWebhookConsole as honoConsole } from '@email-webhooks/hono'
import { emailWebhookConsole as koaConsole } from '@email-webhooks/koa'
import { serve } from '@hono/node-server'
import { bodyParser } from '@koa/bodyparser'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { AUTH, CREDENTIALS, deadEntries, inboxOf, item } from './helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'console-adapters-'))
let n = 0
let stop: (() => Promise<void>) | undefined
afterEach(async () => {
  await stop?.()
  stop = undefined
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const PATH = '/webhooks-console'

function listening(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.once('listening', () => {
      stop = async () => {
        server.closeAllConnections()
        await new Promise((done) => server.close(done))
      }
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    }),
  )
}

type Options = { store: SqliteDedupStore; auth: typeof CREDENTIALS; actions: true }
const APPS: Record<string, (options: Options) => Promise<string>> = {
  express: async (options) => {
    const app = express()
    // A form parser before the console: the console reads the parsed form.
    app.use(express.urlencoded({ extended: false }))
    app.use(PATH, expressConsole(options))
    app.get('/health', (_req, res) => void res.send('ok'))
    return listening(app.listen(0, '127.0.0.1'))
  },
  hono: async (options) => {
    const app = new Hono()
    app.all(`${PATH}/*`, honoConsole(options))
    app.get('/health', (c) => c.text('ok'))
    return listening(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server)
  },
  fastify: async (options) => {
    const app = Fastify()
    await app.register(fastifyConsole, { prefix: PATH, ...options })
    app.get('/health', async () => 'ok')
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    stop = () => app.close()
    return address
  },
  koa: async (options) => {
    const app = new Koa()
    app.use(bodyParser())
    app.use(koaConsole({ basePath: PATH, ...options }))
    app.use(async (ctx) => {
      if (ctx.path === '/health') ctx.body = 'ok'
    })
    return listening(app.listen(0, '127.0.0.1'))
  },
}

describe.each(Object.keys(APPS))('the console mounted on %s', (name) => {
  it('serves the console under its path only, signed in, and takes a same-origin action with its token', async () => {
    const store = new SqliteDedupStore({ path: join(dir, `${name}-${++n}.db`) })
    await deadEntries(inboxOf(store), [item('mounted-1', 'email.bounced')], 'boom')
    const base = await (APPS[name] as (o: Options) => Promise<string>)({ store, auth: CREDENTIALS, actions: true })
    const headers = { authorization: AUTH }
    expect((await fetch(`${base}${PATH}/dead`)).status).toBe(401)
    const root = await fetch(`${base}${PATH}`, { headers, redirect: 'manual' })
    expect([root.status, root.headers.get('location')]).toEqual([303, `${PATH}/`])
    const dead = await fetch(`${base}${PATH}/dead`, { headers })
    const text = await dead.text()
    expect(dead.status).toBe(200)
    expect(text).toContain(`href="${PATH}/events/mounted-1"`)
    expect(text).toContain(`href="${PATH}/assets/console.css"`)
    const css = await fetch(`${base}${PATH}/assets/console.css`, { headers })
    expect([css.status, css.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8'])
    const token = /name="csrf" value="([^"]+)"/.exec(text)?.[1] as string
    const cookie = (dead.headers.get('set-cookie') as string).split(';')[0] as string
    expect(dead.headers.get('set-cookie')).toContain(`Path=${PATH}`)
    const retry = await fetch(`${base}${PATH}/dead/retry`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...headers, cookie, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: token, one: 'default:mounted-1' }).toString(),
    })
    expect([retry.status, retry.headers.get('location')]).toEqual([303, `${PATH}/dead?retried=1`])
    expect((await inboxOf(store).get('default:mounted-1'))?.state).toBe('pending')
    const crossSite = await fetch(`${base}${PATH}/dead/retry`, {
      method: 'POST',
      headers: { ...headers, cookie, origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: token, one: 'default:mounted-1' }).toString(),
    })
    expect(crossSite.status).toBe(403)
    expect(await (await fetch(`${base}/health`)).text()).toBe('ok')
    await stop?.()
    stop = undefined
    await store.close()
  })
})

describe('mount options', () => {
  it('Koa needs basePath; Fastify takes the path from its register prefix', async () => {
    const store = new SqliteDedupStore({ path: join(dir, `opts-${++n}.db`) })
    // @ts-expect-error basePath is required with Koa
    expect(() => koaConsole({ store, auth: CREDENTIALS })).toThrow(/Koa has no mount path: give basePath/)
    const app = Fastify()
    await expect(app.register(fastifyConsole, { prefix: PATH, basePath: '/x', store, auth: CREDENTIALS }).ready()).rejects.toThrow(
      /give the path as the register prefix/,
    )
    await store.close()
  })
})
