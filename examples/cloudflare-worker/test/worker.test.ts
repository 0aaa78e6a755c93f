/**
 * examples/cloudflare-worker in workerd (Miniflare from npm, on the Node 24 from npm): the
 * bundled Worker answers signed deliveries over HTTP on 127.0.0.1, keeps its dedup in Durable
 * Objects (DurableObjectDedupStore) across a restart, and bundles none of the Node-only modules.
 * A second Worker without a store shows the default store on workerd: memory with one warning that
 * points at the Durable Object store, never SQLite. (The stores' conformance suites run inside
 * workerd in test/runtimes/cloudflare.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectDedupAcrossRestart, expectExampleAnswers, NODE_ONLY_FILE } from '../../../test/runtimes/example-deliveries.js'
import { miniflareDir, RUNTIMES_DIR, runtimeBin, startServer } from '../../../test/runtimes/runtimes.js'

import { buildWorker } from '../scripts/build.mjs'

const NODE24 = await runtimeBin('node24')
const MINIFLARE_DIR = await miniflareDir()

const exampleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const scratch = mkdtempSync(join(tmpdir(), 'example-worker-'))
const env = {
  ...process.env,
  EMAIL_WEBHOOK_SECRET: TEST_SECRET,
  D1_PERSIST: join(scratch, 'd1'),
  DO_PERSIST: join(scratch, 'do'),
  NO_COLOR: '1',
  MINIFLARE_DIR,
}
const workerFile = join(scratch, 'worker.js')
const defaultStoreWorkerFile = join(scratch, 'default-store-worker.js')
let inputs: Record<string, string[]> = {}

beforeAll(async () => {
  const built = await buildWorker(join(exampleDir, 'src/worker.js'), workerFile)
  const defaults = await buildWorker(join(RUNTIMES_DIR, 'workerd/default-store-worker.js'), defaultStoreWorkerFile)
  inputs = { example: Object.keys(built.inputs), defaultStore: Object.keys(defaults.inputs) }
})
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const serve = (file: string) => startServer(NODE24, ['scripts/serve.mjs', file], { cwd: exampleDir, env, timeoutMs: 60_000 })

describe('examples/cloudflare-worker', () => {
  it('bundles the Web Crypto backend and the web default store, and nothing Node-only', () => {
    for (const list of Object.values(inputs)) {
      expect(list.some((f) => f.endsWith('packages/core/dist/crypto-web.js'))).toBe(true)
      expect(list.some((f) => f.endsWith('packages/core/dist/default-store-web.js'))).toBe(true)
      expect(list.filter((f) => NODE_ONLY_FILE.test(f))).toEqual([])
    }
  })

  it('answers valid, duplicate, tampered, stale and unknown-type deliveries over HTTP, and runs the handler once', async () => {
    const server = await serve(workerFile)
    try {
      await expectExampleAnswers(server)
    } finally {
      await server.stop()
    }
  })

  it('still knows a handled event after workerd restarts (Durable Object storage)', async () => {
    await expectDedupAcrossRestart(() => serve(workerFile))
  })

  it('uses Web Crypto and the memory default store, with one warning, when a Worker gives no store', async () => {
    const server = await serve(defaultStoreWorkerFile)
    try {
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const statuses = []
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${server.url}/hooks`, { method: 'POST', headers: delivery.headers, body: delivery.body })
        statuses.push([res.status, await res.json()])
      }
      expect(statuses).toEqual([
        [200, { ok: true }],
        [200, { ok: true, duplicate: true }],
      ])
      const report = (await (await fetch(`${server.url}/`)).json()) as { backend: string; handled: number; warnings: string[] }
      expect(report.backend).toBe('web')
      expect(report.handled).toBe(1)
      expect(report.warnings).toHaveLength(1)
      expect(report.warnings[0]).toContain('SQLite is not available on this runtime')
      expect(report.warnings[0]).toContain('On Cloudflare Workers, use DurableObjectDedupStore from @email-webhooks/cloudflare')
    } finally {
      await server.stop()
    }
  })
})
