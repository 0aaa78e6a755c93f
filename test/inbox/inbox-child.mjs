// A process of the inbox crash tests (crash.test.ts), on the SQLite file <db>:
//   node inbox-child.mjs web <db>                  receives the signed delivery on stdin (JSON
//                                                   { headers, body }), prints its answer, waits
//   node inbox-child.mjs worker <db> <journal> <hang|work|slow>
//                                                   runs an inbox worker (small lease); each handler
//                                                   run appends "start <id>" to <journal> with a
//                                                   synchronous write (it survives kill -9), then
//                                                   hangs forever (hang), or runs 4 s (slow), and
//                                                   appends "done <id>" (work, slow)
// INBOX_OPTIONS (JSON) replaces the worker's inbox options.
// Every child ends after 60 s at most, so a failed test never leaves it running.
import { appendFileSync } from 'node:fs'
import { createReceiver } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { TEST_SECRET } from '@email-webhooks/core/testing'

setTimeout(() => process.exit(3), 60_000).unref()
const [role, db, journal, behaviour] = process.argv.slice(2)

/** The inbox's deadlines in these tests: a handler may run 1 s, its lease lasts 1.5 s. */
const INBOX = process.env.INBOX_OPTIONS
  ? JSON.parse(process.env.INBOX_OPTIONS)
  : { handlerTimeoutMs: 1_000, leaseMs: 1_500, pollMs: 20, concurrency: 1 }

/** Log lines go to stderr: stdout carries the web process's answer alone. */
const logger = {
  error: (line) => process.stderr.write(`${line}\n`),
  warn: (line) => process.stderr.write(`${line}\n`),
  info: (line) => process.stderr.write(`${line}\n`),
}

const handler = async (event) => {
  appendFileSync(journal, `start ${event.id}\n`)
  if (behaviour === 'hang') await new Promise(() => setInterval(() => {}, 1_000))
  if (behaviour === 'slow') await new Promise((resolve) => setTimeout(resolve, 4_000))
  appendFileSync(journal, `done ${event.id}\n`)
}

if (role === 'web') {
  const receiver = createReceiver({
    secret: TEST_SECRET,
    store: new SqliteDedupStore({ path: db }),
    mode: 'inbox',
    inbox: { ...INBOX, worker: false },
    handlers: {},
    logger,
  })
  let input = ''
  process.stdin.on('data', (chunk) => {
    input += chunk
  })
  process.stdin.on('end', async () => {
    const { headers, body } = JSON.parse(input)
    const answer = await receiver.receive({ headers, body })
    process.stdout.write(`${answer.status} ${answer.body}\n`)
    setInterval(() => {}, 1_000)
  })
} else {
  createReceiver({
    secret: TEST_SECRET,
    store: new SqliteDedupStore({ path: db }),
    mode: 'inbox',
    inbox: INBOX,
    handlers: { 'email.bounced': handler },
    logger,
  })
  // The worker's timers are unref'd; this keeps the process alive until it is killed.
  setInterval(() => {}, 1_000)
}
