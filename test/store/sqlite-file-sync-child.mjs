// Run under strace by sqlite-checkpoint.test.ts, which fails every fdatasync of the database file
// (not of its WAL): claims and completes events in 10 lanes, with one inbox entry first (so that the
// checkpointer's thread starts on one core too), until the store refuses or 60,000 events are done.
// Prints one JSON line: the keys completed, and the error the store then gave (or null).
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'

const [path] = process.argv.slice(2)
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const store = new SqliteDedupStore({ path, warn: () => {} })
await store.inbox.enqueue({ key: 'inbox-1', type: 'email.bounced', payload: '{}', timestamp: 1_700_000_000 }, LONG)
const completed = []
let refused = null
let next = 0
const lane = async () => {
  while (refused === null && next < 60_000) {
    const key = `event-${next++}`
    try {
      const claimed = await store.claim(key, LONG)
      if (claimed.status !== 'acquired') throw new Error(`${key} was ${claimed.status}`)
      if (await store.complete(claimed.claim, LONG)) completed.push(key)
    } catch (error) {
      refused ??= { name: error.name, code: error.code, message: error.message }
    }
  }
}
await Promise.all(Array.from({ length: 10 }, lane))
const after = await store.claim('after', LONG).then(
  () => null,
  (error) => error.code,
)
await store.close()
console.log(JSON.stringify({ completed, refused, after }))
