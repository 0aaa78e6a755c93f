// Run by `deno test` (see server.test.ts): the conformance suite of @email-webhooks/core/testing
// against DenoKvDedupStore, on a KV file in a temporary folder.
import { dedupStoreConformance } from '@email-webhooks/core/testing'
import { DenoKvDedupStore } from '../src/deno-kv-store.ts'

const dir = await Deno.makeTempDir()
const kv = await Deno.openKv(`${dir}/dedup.kv`)

// deno test has no describe; a test with steps plays its part.
const tests: { name: string; fn: () => Promise<void> }[] = []
dedupStoreConformance(
  'DenoKvDedupStore (examples/deno)',
  { describe: (_name, fn) => fn(), it: (name, fn) => void tests.push({ name, fn }) },
  { createStore: () => new DenoKvDedupStore(kv), closeAfterEach: false },
)

Deno.test('DedupStore conformance: DenoKvDedupStore (examples/deno)', async (t) => {
  try {
    for (const test of tests) await t.step(test.name, test.fn)
  } finally {
    kv.close()
    await Deno.remove(dir, { recursive: true })
  }
})
