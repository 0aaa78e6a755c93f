// A fresh process for receiver.test.ts: builds a receiver with no `store` option (so the
// runtime's default store is used; STORE=memory passes store: 'memory'), receives the deliveries
// given as JSON in DELIVERIES and prints one JSON line: the answers, how often the handler ran
// and the crypto backend, or the error thrown when the receiver was built.
// Started as `node default-store-child.mjs` (Node default: SQLite) or with
// `--conditions=workerd` (the non-Node default: memory with a warning at construction).
import { createReceiver, cryptoBackendName, DedupStoreError } from '@email-webhooks/core'
import { TEST_SECRET } from '@email-webhooks/core/testing'

const deliveries = JSON.parse(process.env.DELIVERIES ?? '[]')
let handled = 0
let receiver
try {
  receiver = createReceiver({
    secret: TEST_SECRET,
    ...(process.env.STORE === 'memory' ? { store: 'memory' } : {}),
    handlers: {
      'email.bounced': () => {
        handled++
      },
    },
  })
} catch (error) {
  const isDedupStoreError = error instanceof DedupStoreError
  console.log(JSON.stringify({ error: { name: error.name, code: error.code, message: error.message, isDedupStoreError } }))
  process.exit(0)
}
console.error('built')
const answers = []
for (const delivery of deliveries) {
  const answer = await receiver.receive({ headers: delivery.headers, body: delivery.body })
  answers.push({ status: answer.status, body: answer.body })
}
console.log(JSON.stringify({ answers, handled, backend: cryptoBackendName() }))
