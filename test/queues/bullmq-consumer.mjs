// A BullMQ consumer in a process of its own, for the kill -9 tests (bullmq-worker.test.ts): a Worker
// running bullmqProcessor(createInboxProcessor(…)) over the SQLite file <db>, whose handler appends
// "start <id>" to <journal> (a synchronous write: it survives kill -9) and then hangs.
//   node bullmq-consumer.mjs '<json { connection, name, db, journal, leaseMs }>'
// It ends after 60 s at most, so a failed test never leaves it running.
import { appendFileSync } from 'node:fs'
import { bullmqProcessor } from '@email-webhooks/bullmq'
import { createInboxProcessor, EMAIL_EVENT_TYPES } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { Worker } from 'bullmq'

setTimeout(() => process.exit(3), 60_000).unref()
const { connection, name, db, journal, leaseMs } = JSON.parse(process.argv[2])
const hang = async (event) => {
  appendFileSync(journal, `start ${event.id}\n`)
  await new Promise(() => setInterval(() => {}, 1_000))
}
const processor = createInboxProcessor({
  store: new SqliteDedupStore({ path: db }),
  leaseMs,
  logger: false,
  handlers: Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, hang])),
})
new Worker(name, bullmqProcessor(processor), { connection, lockDuration: 2_000, stalledInterval: 1_000 })
setInterval(() => {}, 1_000)
