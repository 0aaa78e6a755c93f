// Run by `deno test` (see server.test.ts): the dedup-store conformance suite of
// @email-webhooks/core/testing (durations checked too) and the ordering suite (the store declares
// no ordering) against DenoKvDedupStore from @email-webhooks/core/deno-kv, on a KV file in a
// temporary folder.
import { DenoKvDedupStore } from '@email-webhooks/core/deno-kv'
import { dedupStoreConformance, orderingConformance } from '@email-webhooks/core/testing'

const dir = await Deno.makeTempDir()
const kv = await Deno.openKv(`${dir}/dedup.kv`)

// deno test has no describe; a test with steps plays its part.
const tests: { name: string; fn: () => Promise<void> }[] = []
const runner = {
  describe: (_name: string, fn: () => void) => fn(),
  it: (name: string, fn: () => Promise<void>) => void tests.push({ name, fn }),
}
dedupStoreConformance('DenoKvDedupStore', runner, {
  createStore: () => new DenoKvDedupStore(kv),
  closeAfterEach: false,
  checkDurations: true,
})
orderingConformance('DenoKvDedupStore', runner, {
  createStore: () => new DenoKvDedupStore(kv),
  closeAfterEach: false,
  expectCapability: false,
})

Deno.test('DedupStore conformance: DenoKvDedupStore (@email-webhooks/core/deno-kv)', async (t) => {
  try {
    for (const test of tests) await t.step(test.name, test.fn)
  } finally {
    kv.close()
    await Deno.remove(dir, { recursive: true })
  }
})
