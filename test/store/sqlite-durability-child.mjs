// Run under strace by sqlite-durability.test.ts: claims and completes events one after another
// and prints a line after each step, so the trace shows where the WAL sync falls.
import { writeSync } from 'node:fs'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'

const [path, durability, count] = process.argv.slice(2)
const store = new SqliteDedupStore({ path, durability })
const options = { leaseMs: 60_000, retentionMs: 3_600_000 }
for (let i = 0; i < Number(count); i++) {
  const result = await store.claim(`event-${i}`, options)
  if (result.status !== 'acquired') throw new Error(`event-${i} was ${result.status}`)
  writeSync(1, `claimed event-${i}\n`)
  if (!(await store.complete(result.claim, options))) throw new Error(`event-${i} did not complete`)
  writeSync(1, `completed event-${i}\n`)
}
await store.close()
