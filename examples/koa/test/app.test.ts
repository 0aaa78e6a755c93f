/**
 * examples/koa: the app answers signed deliveries over a real listener (valid, duplicate, tampered,
 * stale, unknown type), runs the bounce handler once, keeps its SQLite dedup across a restart of
 * the server process, and the body parser mounted after the webhook route still serves its JSON route.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MemoryDedupStore, signWebhook } from '@email-webhooks/core'
import { createEvent, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { expectDedupAcrossRestart, expectExampleAnswers } from '../../../test/runtimes/example-deliveries.js'
import { startServer } from '../../../test/runtimes/runtimes.js'
import { createApp } from '../src/app.js'

const exampleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const scratch = mkdtempSync(join(tmpdir(), 'example-koa-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const env = { ...process.env, PORT: '0', EMAIL_WEBHOOK_SECRET: TEST_SECRET, EMAIL_WEBHOOKS_DB: join(scratch, 'dedup.db') }
const start = () => startServer(process.execPath, ['src/server.js'], { cwd: exampleDir, env, timeoutMs: 20_000 })

describe('examples/koa', () => {
  it('answers valid, duplicate, tampered, stale and unknown-type deliveries over HTTP, and runs the handler once', async () => {
    const server = await start()
    try {
      await expectExampleAnswers(server)
    } finally {
      await server.stop()
    }
  })

  it('still knows a handled event after a restart (the default SQLite file)', async () => {
    await expectDedupAcrossRestart(start)
  })

  it('verifies the exact bytes (BOM, invalid UTF-8), and the JSON route after the body parser still parses', async () => {
    const bounced: string[] = []
    const app = createApp({ secret: TEST_SECRET, store: new MemoryDedupStore(), markBounced: (id: string) => void bounced.push(id) })
    const server = app.listen(0, '127.0.0.1')
    await new Promise((done) => server.once('listening', done))
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const event = createEvent('email.bounced')
      const text = new TextEncoder().encode(JSON.stringify(event).replace('"data":{', '"data":{"note":"X",'))
      const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...text])
      bytes[new TextDecoder().decode(text).indexOf('"X"') + 4] = 0xff
      const { headers } = await signWebhook({ secret: TEST_SECRET, body: bytes, id: event.id, timestamp: Math.floor(Date.now() / 1000) })
      const hook = await fetch(`${base}/hooks`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: bytes,
      })
      expect([hook.status, await hook.json()]).toEqual([200, { ok: true }])
      expect(bounced).toEqual([event.data.id])
      const note = await fetch(`${base}/api/notes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"text":"hi"}',
      })
      expect(await note.json()).toEqual({ saved: { text: 'hi' } })
    } finally {
      server.close()
    }
  })
})
