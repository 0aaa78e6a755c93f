// Runs the dedup-store conformance suite inside workerd against examples/cloudflare-worker's
// D1DedupStore on the `DB` binding. A GET answers with the results as JSON.
import { dedupStoreConformance } from '@email-webhooks/core/testing'
import { D1DedupStore } from '../../../examples/cloudflare-worker/src/d1-store.js'

export default {
  async fetch(_request, env) {
    const tests = []
    dedupStoreConformance(
      'D1DedupStore (examples/cloudflare-worker)',
      { describe: (_name, fn) => fn(), it: (name, fn) => void tests.push({ name, fn }) },
      { createStore: () => new D1DedupStore(env.DB), closeAfterEach: false },
    )
    const results = []
    for (const test of tests) {
      try {
        await test.fn()
        results.push({ name: test.name, ok: true })
      } catch (error) {
        results.push({ name: test.name, ok: false, error: String(error) })
      }
    }
    return Response.json(results)
  },
}
