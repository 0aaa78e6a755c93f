// Run by sqlite-checkpoint.test.ts: writes <count> events on a new store at <path> (enough for its
// checkpointer thread to start), closes it, then prints one JSON line with how many rows the file
// holds. The process has nothing else to keep it alive while close() waits for the thread: if the
// thread did not keep it, the script would end inside close() and print nothing (exit code 13).
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Database from 'better-sqlite3'

const [path, count] = process.argv.slice(2)
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const store = new SqliteDedupStore({ path, durability: 'full' })
// One inbox entry: on a single core the thread starts only once the inbox writes.
await store.inbox.enqueue({ key: 'inbox-1', type: 'email.bounced', payload: '{}', timestamp: 1_700_000_000 }, LONG)
for (let i = 0; i < Number(count); i++) {
  const claimed = await store.claim(`event-${i}`, LONG)
  if (claimed.status !== 'acquired') throw new Error(`event-${i} was ${claimed.status}`)
  await store.complete(claimed.claim, LONG)
}
await store.close()
const db = new Database(path, { readonly: true })
console.log(JSON.stringify({ rows: db.prepare('SELECT count(*) FROM email_webhook_dedup_done').pluck().get() }))
db.close()
