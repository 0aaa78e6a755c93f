/**
 * The Hono adapter in workerd (Miniflare from npm, on the Node 24 from npm): a Worker built
 * from a Hono app with @email-webhooks/hono answers signed deliveries over HTTP on 127.0.0.1.
 * Inside workerd the Web Crypto backend is loaded and signs the 16 HMAC vectors as the Node path does.
 * (examples/cloudflare-worker/test covers core's fetch handler, the D1 store and the default store.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { buildWorker } from '../../examples/cloudflare-worker/scripts/build.mjs'
import { expectExampleAnswers, NODE_ONLY_FILE } from './example-deliveries.js'
import { expectedVectorResults } from './neutral/vectors-check.ts'
import { miniflareDir, ROOT, RUNTIMES_DIR, runtimeBin, startServer } from './runtimes.js'

const NODE24 = await runtimeBin('node24')
const MINIFLARE_DIR = await miniflareDir()

const scratch = mkdtempSync(join(tmpdir(), 'hono-workerd-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const serve = (file: string) =>
  startServer(NODE24, ['scripts/serve.mjs', file], {
    cwd: join(ROOT, 'examples/cloudflare-worker'),
    env: { ...process.env, EMAIL_WEBHOOK_SECRET: TEST_SECRET, NO_COLOR: '1', MINIFLARE_DIR },
    timeoutMs: 60_000,
  })

describe('workerd', () => {
  it('loads the Web Crypto backend and signs and verifies the 16 vectors exactly as the Node path does', async () => {
    const file = join(scratch, 'vectors-worker.js')
    await buildWorker(join(RUNTIMES_DIR, 'workerd/vectors-worker.ts'), file)
    const server = await serve(file)
    try {
      const report = (await (await fetch(`${server.url}/`)).json()) as { backend: string; vectors: unknown[] }
      expect(report.backend).toBe('web')
      expect(report.vectors).toEqual(await expectedVectorResults())
      expect(report.vectors).toHaveLength(16)
    } finally {
      await server.stop()
    }
  })

  it('runs the Hono adapter: valid, duplicate, tampered, stale and unknown-type deliveries over HTTP, bundling no Node-only file', async () => {
    const file = join(scratch, 'hono-worker.js')
    const meta = await buildWorker(join(RUNTIMES_DIR, 'workerd/hono-worker.js'), file)
    const inputs = Object.keys(meta.inputs)
    expect(inputs.some((f) => f.endsWith('packages/hono/dist/index.js'))).toBe(true)
    expect(inputs.filter((f) => NODE_ONLY_FILE.test(f))).toEqual([])
    const server = await serve(file)
    try {
      await expectExampleAnswers(server)
    } finally {
      await server.stop()
    }
  })
})
