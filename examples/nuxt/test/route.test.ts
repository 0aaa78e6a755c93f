/**
 * examples/nuxt: the server route served by h3 1 (what Nuxt's Nitro runs on) over a real listener on
 * 127.0.0.1, at the path Nuxt gives it (/api/hooks). Proves the route answers every recipe delivery
 * over HTTP, reads the exact bytes and refuses a streamed body past 1 MiB with 413 while the server
 * keeps running; Nuxt's build, file-based routing and non-Node presets are not exercised here. A
 * second test shows why the route does not use toWebRequest: h3 1's stream throws past the limit.
 */

import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { emailWebhook, MemoryDedupStore } from '@email-webhooks/core'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { createApp, createRouter, defineEventHandler, toNodeListener, toWebRequest } from 'h3'
import { afterAll, describe, expect, it } from 'vitest'
import { expectWebRecipe, overHttp } from '../../../test/recipes/web-recipe.js'

const scratch = mkdtempSync(join(tmpdir(), 'example-nuxt-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('examples/nuxt: server/api/hooks.post.ts', () => {
  it('answers the recipe deliveries over HTTP through h3 and marks each new bounce once', async () => {
    Object.assign(process.env, { EMAIL_WEBHOOK_SECRET: TEST_SECRET, EMAIL_WEBHOOKS_DB: join(scratch, 'dedup.db') })
    const { default: route } = await import('../server/api/hooks.post.js')
    const { bounced } = await import('../server/utils/db.js')
    const app = createApp()
    app.use(createRouter().post('/api/hooks', route))
    const server = createServer(toNodeListener(app)).listen(0, '127.0.0.1')
    await new Promise((done) => server.once('listening', done))
    try {
      await expectWebRecipe(overHttp(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), () => bounced, '/api/hooks')
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
  it('(why) toWebRequest with the fetch handler: a body past the limit throws in h3 1, outside any handler', async () => {
    const handle = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore(), logger: false })
    const app = createApp()
    app.use(
      createRouter().post(
        '/hooks',
        defineEventHandler((event) => handle(toWebRequest(event))),
      ),
    )
    const server = createServer(toNodeListener(app)).listen(0, '127.0.0.1')
    await new Promise((done) => server.once('listening', done))
    const uncaught: Error[] = []
    const listeners = process.listeners('uncaughtException')
    process.removeAllListeners('uncaughtException')
    process.on('uncaughtException', (error) => void uncaught.push(error))
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const big = new Uint8Array(2 * 1024 * 1024).fill(0x20)
      // What the client gets then varies with Node's version (the 413, or Node's own 400 once the
      // error breaks the request's parsing); the uncaught error does not.
      await fetch(`${base}/hooks`, { method: 'POST', body: big }).catch(() => undefined)
      await new Promise((done) => setTimeout(done, 200))
      expect(uncaught.map((error) => error.message)).toContain('Invalid state: Controller is already closed')
    } finally {
      process.removeAllListeners('uncaughtException')
      for (const listener of listeners) process.on('uncaughtException', listener)
      server.closeAllConnections()
      server.close()
    }
  })
})
