// The demo: starts this example app on a free port with the default SQLite store, sends
// signed deliveries over HTTP, and prints what happened to each. Exits 1 if any answer is
// not the one a correct receiver gives.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EMAIL_EVENT_TYPES } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { createApp } from './app.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-demo-'))
process.env.EMAIL_WEBHOOKS_DB = join(dir, 'dedup.db')

const ran = []
let failNextBounce = false
const app = createApp({
  secret: TEST_SECRET,
  actions: {
    markBounced: (id) => {
      if (failNextBounce) {
        failNextBounce = false
        throw new Error('database unavailable (simulated)')
      }
      ran.push(`markBounced(${id.slice(-4)})`)
    },
    suppress: (id) => void ran.push(`suppress(${id.slice(-4)})`),
    markDelivered: (id) => void ran.push(`markDelivered(${id.slice(-4)})`),
  },
  onUnknown: (type) => void ran.push(`onUnknown(${type})`),
})
const server = app.listen(0, '127.0.0.1')
await new Promise((resolve) => server.once('listening', resolve))
const url = `http://127.0.0.1:${server.address().port}/hooks`

const rows = []
async function send(what, delivery, expected, why) {
  const before = ran.length
  const res = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body })
  const json = await res.json()
  const handler = ran.length > before ? ran.slice(before).join(', ') : 'no'
  const answer = `${res.status} ${json.error ? json.error.code : json.duplicate ? 'duplicate' : 'ok'}`
  rows.push({ what, answer, handler, why, ok: res.status === expected })
}

for (const type of EMAIL_EVENT_TYPES) {
  const hasHandler = ['email.bounced', 'email.complained', 'email.recipient_accepted'].includes(type)
  await send(
    type,
    await createSignedDelivery({ type }),
    200,
    hasHandler ? 'verified, handled, recorded' : 'verified; no handler for this type, acknowledged',
  )
}
await send(
  'organization.updated (unknown type)',
  await createSignedDelivery({ type: 'organization.updated' }),
  200,
  'unknown types are acknowledged so the endpoint stays enabled',
)

const bounce = await createSignedDelivery({ type: 'email.bounced' })
await send('email.bounced', bounce, 200, 'first delivery')
await send(
  'email.bounced again (same webhook-id)',
  await createSignedDelivery({ event: bounce.event }),
  200,
  'duplicate: already handled, handler not run',
)

const tampered = await createSignedDelivery({ type: 'email.complained' })
await send(
  'email.complained, body tampered',
  { ...tampered, body: tampered.body.replace('complained', 'queued') },
  401,
  'signature does not match the bytes',
)
const stale = await createSignedDelivery({ type: 'email.bounced', timestamp: Math.floor(Date.now() / 1000) - 600 })
await send('email.bounced signed 10 min ago', stale, 401, 'outside the ±300 s window (replay)')

failNextBounce = true
const flaky = await createSignedDelivery({ type: 'email.bounced' })
await send('email.bounced, handler fails', flaky, 500, 'handler threw: claim released, sender will retry')
await send('  … its retry', await createSignedDelivery({ event: flaky.event }), 200, 'retry runs the handler again and succeeds')

server.close()
rmSync(dir, { recursive: true, force: true })

const columns = [
  ['#', (_row, i) => String(i + 1)],
  ['sent', (row) => row.what],
  ['HTTP answer', (row) => row.answer],
  ['handler ran', (row) => row.handler],
  ['why', (row) => row.why],
]
const cells = rows.map((row, i) => columns.map(([, get]) => get(row, i)))
const widths = columns.map(([title], c) => Math.max(title.length, ...cells.map((line) => line[c].length)))
const line = (values) =>
  values
    .map((value, c) => value.padEnd(widths[c]))
    .join('  ')
    .trimEnd()
console.log(`email-webhooks demo: examples/express on ${url} with the default SQLite store\n`)
console.log(line(columns.map(([title]) => title)))
console.log(line(widths.map((w) => '-'.repeat(w))))
for (const values of cells) console.log(line(values))
const wrong = rows.filter((row) => !row.ok)
console.log(wrong.length === 0 ? `\nAll ${rows.length} answers are the ones the sender needs.` : `\n${wrong.length} answers were wrong.`)
process.exit(wrong.length === 0 ? 0 : 1)
