/**
 * @email-webhooks/cloudflare in workerd (Miniflare from npm, on the Node 24 from npm): the
 * dedup-store conformance suite against D1DedupStore and DurableObjectDedupStore (16 shards and
 * 1), the ordering suite against D1DedupStore and the one-shard DurableObjectDedupStore (the
 * sharded one declares no ordering), the schema stamp and the refusal of a newer one, and the
 * purges of expired rows (D1 by claims, Durable Objects by their alarm), all run inside workerd by test/runtimes/workerd/cloudflare-conformance-worker.js.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryDedupStore } from '@email-webhooks/core'
import { dedupStoreConformance, orderingConformance } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildWorker } from '../../examples/cloudflare-worker/scripts/build.mjs'
import { scaled } from '../support/time.js'
import { NODE_ONLY_FILE } from './example-deliveries.js'
import { miniflareDir, ROOT, RUNTIMES_DIR, runtimeBin, type Server, startServer } from './runtimes.js'

const NODE24 = await runtimeBin('node24')
const MINIFLARE_DIR = await miniflareDir()
const scratch = mkdtempSync(join(tmpdir(), 'cloudflare-workerd-'))
const file = join(scratch, 'worker.js')
let server: Server
let inputs: string[] = []

beforeAll(async () => {
  inputs = Object.keys((await buildWorker(join(RUNTIMES_DIR, 'workerd/cloudflare-conformance-worker.js'), file)).inputs)
  server = await startServer(NODE24, ['scripts/serve.mjs', file], {
    cwd: join(ROOT, 'examples/cloudflare-worker'),
    env: { ...process.env, NO_COLOR: '1', MINIFLARE_DIR },
    timeoutMs: 60_000,
  })
})
afterAll(async () => {
  await server?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** How many tests a suite registers (counted here in Node, on a memory store). */
function count(register: (runner: { describe: (name: string, fn: () => void) => void; it: () => void }) => void): number {
  let tests = 0
  register({ describe: (_name, fn) => fn(), it: () => void tests++ })
  return tests
}
const DEDUP = count((runner) => dedupStoreConformance('count', runner, { createStore: () => new MemoryDedupStore(), checkDurations: true }))
const ORDERING = count((runner) => orderingConformance('count', runner, { createStore: () => new MemoryDedupStore() }))

async function suite(name: string): Promise<{ name: string; ok: boolean; skipped?: string; error?: string }[]> {
  // The expiry cases' short lease and retention stretch with TEST_TIME_SCALE, as on the other stores.
  const response = await fetch(`${server.url}/?suite=${name}&shortMs=${scaled(300)}`, { signal: AbortSignal.timeout(scaled(120_000)) })
  expect(response.status).toBe(200)
  return (await response.json()) as { name: string; ok: boolean; skipped?: string; error?: string }[]
}

describe('@email-webhooks/cloudflare inside workerd', () => {
  it('bundles nothing Node-only into the Worker', () => {
    expect(inputs.some((f) => f.endsWith('packages/cloudflare/dist/index.js'))).toBe(true)
    expect(inputs.filter((f) => NODE_ONLY_FILE.test(f))).toEqual([])
  })

  for (const [name, expected] of [
    ['d1-dedup', DEDUP],
    ['do-dedup', DEDUP],
    ['do-dedup-one', DEDUP],
    ['d1-ordering', ORDERING],
    ['do-ordering-one', ORDERING],
  ] as const) {
    it(`passes every test of the ${name.includes('ordering') ? 'ordering' : 'dedup-store'} conformance suite (${name}), none skipped but completedBy's`, {
      timeout: 180_000,
    }, async () => {
      const results = await suite(name)
      expect(results).toHaveLength(expected)
      expect(results.filter((r) => !r.ok)).toEqual([])
      // completedBy() is optional: the PostgreSQL and Redis stores have it (a complete's answer can be lost on their line), the Durable Object's not.
      expect(results.filter((r) => r.skipped !== undefined && !r.name.startsWith('completedBy: '))).toEqual([])
    })
  }

  it('declares no ordering with 16 shards, and still deduplicates with order options', async () => {
    const results = await suite('do-ordering-sharded')
    expect(results.map((r) => [r.name, r.ok])).toEqual([
      ['without the capability, still deduplicates with order options and ordering is unknown', true],
    ])
  })

  for (const name of ['d1-schema', 'do-schema']) {
    it(`stamps its tables with schema version 1 and refuses a newer one, writing nothing (${name === 'd1-schema' ? 'D1' : 'Durable Object'})`, async () => {
      const results = await suite(name)
      expect(results).toEqual([{ name: `stamps and refuses a newer schema (${name})`, ok: true }])
    })
  }

  for (const name of ['d1-purge', 'do-purge']) {
    it(`purges rows that expired more than an hour ago and keeps live ones (${name === 'd1-purge' ? 'D1: by claims' : 'Durable Object: by its alarm'})`, async () => {
      const results = await suite(name)
      expect(results).toEqual([{ name: `purges expired rows (${name})`, ok: true }])
    })
  }
})
