/**
 * examples/elysia under real Bun (from npm, like examples/bun): the Elysia app answers signed
 * deliveries over HTTP on 127.0.0.1 (valid, duplicate, tampered, stale, unknown type), runs the
 * handler once, verifies the exact bytes (BOM, invalid UTF-8), refuses a streamed body past 1 MiB
 * with 413, and keeps its dedup in bun:sqlite across a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { oddBytesDelivery } from '../../../test/recipes/web-recipe.js'
import { expectDedupAcrossRestart, expectExampleAnswers } from '../../../test/runtimes/example-deliveries.js'
import { BUN_ARGS, runtimeBin, startServer } from '../../../test/runtimes/runtimes.js'

const BUN = await runtimeBin('bun')

const exampleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const scratch = mkdtempSync(join(tmpdir(), 'example-elysia-'))
const env = {
  ...process.env,
  PORT: '0',
  EMAIL_WEBHOOK_SECRET: TEST_SECRET,
  EMAIL_WEBHOOKS_DB: join(scratch, 'dedup.sqlite'),
  NO_COLOR: '1',
}
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const start = () => startServer(BUN, [...BUN_ARGS, 'src/server.ts'], { cwd: exampleDir, env, timeoutMs: 30_000 })

describe('examples/elysia', () => {
  it('answers valid, duplicate, tampered, stale and unknown-type deliveries over HTTP, and runs the handler once', async () => {
    const server = await start()
    try {
      await expectExampleAnswers(server)
    } finally {
      await server.stop()
    }
  })

  it('verifies the exact bytes (BOM, invalid UTF-8) and answers 413 to a streamed body past 1 MiB', async () => {
    const server = await start()
    try {
      const odd = await oddBytesDelivery()
      const exact = await fetch(`${server.url}/hooks`, { method: 'POST', headers: odd.headers, body: odd.body })
      expect([exact.status, await exact.json()]).toEqual([200, { ok: true }])
      const { headers } = await createSignedDelivery()
      let sent = 0
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= 2 * 1024 * 1024) return controller.close()
          controller.enqueue(new Uint8Array(64 * 1024).fill(0x20))
          sent += 64 * 1024
        },
      })
      const large = await fetch(`${server.url}/hooks`, { method: 'POST', headers, body, duplex: 'half' } as RequestInit)
      expect([large.status, ((await large.json()) as { error: { code: string } }).error.code]).toEqual([413, 'body_too_large'])
    } finally {
      await server.stop()
    }
  })

  it('still knows a handled event after a restart (bun:sqlite file)', async () => {
    await expectDedupAcrossRestart(() => start())
  })
})
