/**
 * examples/fastify: the app answers signed deliveries over a real listener (valid, duplicate,
 * tampered, stale, unknown type) and with `inject()`, runs the bounce handler once, keeps its SQLite
 * dedup across a restart of the server process, and its JSON route still parses JSON.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { expectDedupAcrossRestart, expectExampleAnswers } from '../../../test/runtimes/example-deliveries.js'
import { startServer } from '../../../test/runtimes/runtimes.js'
import { createApp } from '../src/app.js'

const exampleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const scratch = mkdtempSync(join(tmpdir(), 'example-fastify-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const env = { ...process.env, PORT: '0', EMAIL_WEBHOOK_SECRET: TEST_SECRET, EMAIL_WEBHOOKS_DB: join(scratch, 'dedup.db') }
const start = () => startServer(process.execPath, ['src/server.js'], { cwd: exampleDir, env, timeoutMs: 20_000 })

describe('examples/fastify', () => {
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

  it("handles a bounce through inject(), and the app's JSON route still parses JSON", async () => {
    const bounced: string[] = []
    const app = await createApp({ secret: TEST_SECRET, store: new MemoryDedupStore(), markBounced: (id: string) => void bounced.push(id) })
    try {
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const hook = await app.inject({ method: 'POST', url: '/hooks', headers: delivery.headers, payload: delivery.body })
      expect([hook.statusCode, hook.json()]).toEqual([200, { ok: true }])
      expect(bounced).toEqual([delivery.event.data.id])
      const note = await app.inject({ method: 'POST', url: '/api/notes', payload: { text: 'hi' } })
      expect(note.json()).toEqual({ saved: { text: 'hi' } })
    } finally {
      await app.close()
    }
  })
})
