// The demo: starts this example app on a free port with the default SQLite store, sends signed
// deliveries over HTTP, and prints what happened to each: the HTTP status, the receiver's answer
// (its error code and message), and which handler ran and how it ended. Exits 1 if any answer or
// handler outcome is not the one a correct receiver gives.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EMAIL_EVENT_TYPES } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { createApp } from './app.js'

const WINDOW_SECONDS = 300
const MESSAGE_WIDTH = 100

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-demo-'))
process.env.EMAIL_WEBHOOKS_DB = join(dir, 'dedup.db')

/** What the handlers did during the current delivery: `name(…id) ok` or `name(…id) threw: message`. */
let runs = []
let failNextBounce = false
/** Wraps an action so that the demo sees that it ran and how it ended. */
function observed(name, action, { shortArg = true } = {}) {
  return async (arg) => {
    const label = `${name}(${shortArg ? `…${arg.slice(-4)}` : arg})`
    try {
      await action()
      runs.push({ label, ok: true })
    } catch (error) {
      runs.push({ label, ok: false, message: error.message })
      throw error
    }
  }
}
/** @type {string[]} */
const logged = []
const app = createApp({
  secret: TEST_SECRET,
  actions: {
    markBounced: observed('markBounced', () => {
      if (failNextBounce) {
        failNextBounce = false
        throw new Error('database unavailable (simulated)')
      }
    }),
    suppress: observed('suppress', () => {}),
    markDelivered: observed('markDelivered', () => {}),
  },
  onUnknown: observed('onUnknown', () => {}, { shortArg: false }),
  // The receiver logs each 5xx (console.error by default) and warns once of a bad signature and
  // once of a timestamp out of the window (console.warn); kept here and printed after the table.
  logger: { warn: (line) => logged.push(line), error: (line) => logged.push(line) },
})
const server = app.listen(0, '127.0.0.1')
await new Promise((resolve) => server.once('listening', resolve))
const url = `http://127.0.0.1:${server.address().port}/hooks`

const rows = []
/**
 * Sends one delivery and records what happened.
 * @param {string} what the row's label
 * @param {{ headers: Record<string, string>, body: string }} delivery
 * @param {{ status: number, handler: 'ok' | 'threw' | 'none' }} expected what a correct receiver does
 */
async function send(what, delivery, expected) {
  runs = []
  const res = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body })
  const json = await res.json().catch(() => ({}))
  const answer = json.error ? json.error.code : json.duplicate ? 'ok, duplicate' : json.ok ? 'ok' : '(no JSON body)'
  const none = res.status === 200 && answer === 'ok' ? 'none for this type' : 'not run'
  const handler = runs.length === 0 ? none : runs.map((r) => (r.ok ? `${r.label} ok` : `${r.label} threw: ${r.message}`)).join(', ')
  const outcome = runs.length === 0 ? 'none' : runs.every((r) => r.ok) ? 'ok' : 'threw'
  const ok = res.status === expected.status && outcome === expected.handler
  const wanted = ok ? '' : `expected ${expected.status} with handler ${expected.handler}`
  rows.push({ what, status: String(res.status), answer, handler, message: json.error?.message, ok, wanted })
}

const handledTypes = new Set(['email.bounced', 'email.complained', 'email.recipient_accepted'])
for (const type of EMAIL_EVENT_TYPES) {
  await send(type, await createSignedDelivery({ type }), { status: 200, handler: handledTypes.has(type) ? 'ok' : 'none' })
}
await send('organization.updated (unknown type)', await createSignedDelivery({ type: 'organization.updated' }), {
  status: 200,
  handler: 'ok',
})

const bounce = await createSignedDelivery({ type: 'email.bounced' })
await send('email.bounced', bounce, { status: 200, handler: 'ok' })
await send('email.bounced again (same webhook-id)', await createSignedDelivery({ event: bounce.event }), {
  status: 200,
  handler: 'none',
})

const tampered = await createSignedDelivery({ type: 'email.complained' })
await send(
  'email.complained, body tampered',
  { ...tampered, body: tampered.body.replace('complained', 'queued') },
  { status: 401, handler: 'none' },
)
const nowSeconds = Math.floor(Date.now() / 1000)
const stale = await createSignedDelivery({ type: 'email.bounced', timestamp: nowSeconds - 2 * WINDOW_SECONDS })
await send('email.bounced signed 10 min ago', stale, { status: 401, handler: 'none' })
const future = await createSignedDelivery({ type: 'email.bounced', timestamp: nowSeconds + 2 * WINDOW_SECONDS })
await send('email.bounced signed 10 min ahead', future, { status: 401, handler: 'none' })

failNextBounce = true
const flaky = await createSignedDelivery({ type: 'email.bounced' })
await send('email.bounced, handler fails', flaky, { status: 500, handler: 'threw' })
await send('  … its retry', await createSignedDelivery({ event: flaky.event }), { status: 200, handler: 'ok' })

server.close()
rmSync(dir, { recursive: true, force: true })

/** Splits a message into lines of at most `width` characters at spaces. */
function wrap(text, width) {
  const lines = ['']
  for (const word of text.split(' ')) {
    const last = lines.length - 1
    if (lines[last] && lines[last].length + word.length + 1 > width) lines.push(word)
    else lines[last] = lines[last] ? `${lines[last]} ${word}` : word
  }
  return lines
}

const columns = [
  ['#', (_row, i) => String(i + 1)],
  ['sent', (row) => row.what],
  ['HTTP', (row) => row.status],
  ['answer', (row) => row.answer],
  ['handler', (row) => row.handler],
  ['', (row) => (row.ok ? '' : `✗ ${row.wanted}`)],
]
const cells = rows.map((row, i) => columns.map(([, get]) => get(row, i)))
const widths = columns.map(([title], c) => Math.max(title.length, ...cells.map((line) => line[c].length)))
const line = (values) =>
  values
    .map((value, c) => value.padEnd(widths[c]))
    .join('  ')
    .trimEnd()
const indent = ' '.repeat(widths[0] + 2)
console.log(`email-webhooks demo: examples/express on ${url} with the default SQLite store\n`)
console.log(line(columns.map(([title]) => title)))
console.log(line(widths.map((w) => '-'.repeat(w))))
cells.forEach((values, i) => {
  console.log(line(values))
  const message = rows[i].message
  if (message) for (const text of wrap(message, MESSAGE_WIDTH)) console.log(`${indent}${text}`)
})
if (logged.length > 0) {
  console.log('\nWhat the receiver logged (without a logger option: console.warn and console.error):')
  for (const text of logged) for (const part of wrap(text, MESSAGE_WIDTH + indent.length)) console.log(`  ${part}`)
}
const wrong = rows.filter((row) => !row.ok)
console.log(
  wrong.length === 0
    ? `\nAll ${rows.length} answers and handler outcomes are the ones the sender needs.`
    : `\n${wrong.length} of ${rows.length} answers or handler outcomes were wrong (marked ✗).`,
)
process.exit(wrong.length === 0 ? 0 : 1)
