// Type-checked by `deno check` only (test/runtimes/deno-check.test.ts; the workspace's tsc has no
// Deno global and leaves this file out): Deno's own KV database fits DenoKvDedupStore's structural type.
import type { DedupStore } from '@email-webhooks/core'
import { DenoKvDedupStore } from '@email-webhooks/core/deno-kv'

export async function denoKvStore(): Promise<DedupStore> {
  return new DenoKvDedupStore(await Deno.openKv())
}
