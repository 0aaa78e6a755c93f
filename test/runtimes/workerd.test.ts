/**
 * The Hono adapter in workerd (Miniflare from npm, on the Node 24 from npm): a Worker built
 * from a Hono app with @email-webhooks/hono answers signed deliveries over HTTP on 127.0.0.1.
 * (examples/cloudflare-worker/test covers core's fetch handler, the D1 store and the default store.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { buildWorker } from '../../examples/cloudflare-worker/scripts/build.mjs'
import { EXPECTED_ANSWERS, sendExampleDeliveries } from './example-deliveries.js'
import { NODE24, ROOT, RUNTIMES_DIR, startServer } from './runtimes.js'

const scratch = mkdtempSync(join(tmpdir(), 'hono-workerd-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('Hono adapter in workerd', () => {
  it('answers valid, duplicate, tampered, stale and unknown-type deliveries over HTTP, bundling no Node-only file', async () => {
    const file = join(scratch, 'hono-worker.js')
    const meta = await buildWorker(join(RUNTIMES_DIR, 'workerd/hono-worker.js'), file)
    const inputs = Object.keys(meta.inputs)
    expect(inputs.some((f) => f.endsWith('packages/hono/dist/index.js'))).toBe(true)
    expect(inputs.filter((f) => /better-sqlite3|sqlite\.js|crypto-node|default-store-node|^node:/.test(f))).toEqual([])
    const server = await startServer(NODE24, ['scripts/serve.mjs', file], {
      cwd: join(ROOT, 'examples/cloudflare-worker'),
      env: { ...process.env, EMAIL_WEBHOOK_SECRET: TEST_SECRET, NO_COLOR: '1' },
      timeoutMs: 60_000,
    })
    try {
      const { answers, emailId } = await sendExampleDeliveries(`${server.url}/hooks`)
      expect(answers).toEqual(EXPECTED_ANSWERS)
      expect(server.output().split(`email ${emailId} bounced`)).toHaveLength(2)
    } finally {
      await server.stop()
    }
  })
})
