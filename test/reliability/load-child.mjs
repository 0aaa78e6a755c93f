// The load process for soak.test.ts and faults.test.ts: sends signed traffic to a receiver on
// 127.0.0.1 over keep-alive connections and reports over IPC. Commands (IPC messages):
//   { cmd: 'soak', url, durationMs, maxRequests?, concurrency, tag }  mixed traffic for durationMs
//       (or until maxRequests requests were started): new events of
//       known types, unknown types, duplicates of acknowledged events, and invalid requests; every
//       new event is retried until acknowledged (bounded). Replies { type: 'soak-done', ... }.
//   { cmd: 'flood', url, concurrency, tag }  new valid events until 'stop'; a failed request leaves its
//       event unacknowledged. Reports { type: 'progress', acked } every 100 ms, { type: 'flood-done' } on 'stop'.
//   { cmd: 'redeliver', url }  re-sends every unacknowledged event (fresh timestamp and signature)
//       until acknowledged. Replies { type: 'redeliver-done', ... }.
// Exits when the parent goes away, and after 5 minutes at most.
import { createHmac } from 'node:crypto'
import http from 'node:http'
import { TEST_SECRET } from '@email-webhooks/core/testing'

setTimeout(() => process.exit(3), 300_000).unref()
process.on('disconnect', () => process.exit(0))

const KNOWN = ['email.bounced', 'email.queued', 'email.complained', 'email.recipient_accepted']
const MAX_ATTEMPTS = 200
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** All events this process created: id → body; and what happened to them. */
const bodies = new Map()
const acked = new Set()
const unacked = new Set()

function signed(id, body, { secret = TEST_SECRET, skew = 0 } = {}) {
  const ts = String(Math.floor(Date.now() / 1000) + skew)
  const signature = createHmac('sha256', secret).update(`${id}.${ts}.`).update(body).digest('hex')
  return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': signature }
}

function post(url, headers, body) {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) }, agent }, (res) => {
      const chunks = []
      res.on('data', (chunk) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }))
      res.on('error', () => resolve({ status: 0, text: '' }))
    })
    req.setTimeout(15_000, () => req.destroy(new Error('timeout')))
    req.on('error', () => resolve({ status: 0, text: '' }))
    req.end(body)
  })
}

function newEvent(tag, n, type) {
  const id = `${tag}-${n}`
  const body = JSON.stringify({ id, type, created_at: new Date().toISOString(), data: { id: `email-${n}`, pad: 'x'.repeat(n % 512) } })
  bodies.set(id, body)
  return id
}

const stats = { requests: 0, status: {}, rejects: 0, ignored: 0, duplicates: 0, fiveXX: 0, networkErrors: 0, unexpected: [] }
function count(answer) {
  stats.requests++
  const key = answer.status === 0 ? 'network error' : String(answer.status)
  stats.status[key] = (stats.status[key] ?? 0) + 1
  if (answer.status >= 500) stats.fiveXX++
  if (answer.status === 0) stats.networkErrors++
}

/** Sends one event until it is acknowledged (2xx), retrying 409/5xx/network errors; bounded. */
async function deliver(url, id, { giveUpOnNetworkError = false } = {}) {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const answer = await post(url, signed(id, bodies.get(id)), bodies.get(id))
    count(answer)
    if (answer.status === 200) {
      acked.add(id)
      unacked.delete(id)
      return answer
    }
    if (answer.status === 0 && giveUpOnNetworkError) break
    if (answer.status !== 409 && answer.status < 500 && answer.status !== 0) {
      stats.unexpected.push(`${id}: ${answer.status} ${answer.text.slice(0, 100)}`)
      break
    }
    await sleep(answer.status === 409 ? 100 : 50)
  }
  unacked.add(id)
  return undefined
}

const INVALID = [
  (id, body) => ({ headers: signed(id, body, { secret: 'whsec_not_the_secret' }), body }),
  (id, body) => ({ headers: signed(id, body, { skew: -3600 }), body }),
  (id, body) => ({ headers: { ...signed(id, body), 'webhook-signature': 'zz' }, body }),
  (id, body) => ({ headers: signed(id, body), body: `${body} ` }),
  (_id, body) => ({ headers: { 'content-type': 'application/json' }, body }),
  // Signed and in the window but not an envelope: acknowledged as ignored (200), not refused.
  (id) => ({ headers: signed(id, 'not json'), body: 'not json', ignored: true }),
]

async function soak({ url, durationMs, maxRequests = Number.POSITIVE_INFINITY, concurrency, tag }) {
  const deadline = Date.now() + durationMs
  let n = 0
  let started = 0
  let unknownSent = 0
  const worker = async () => {
    while (Date.now() < deadline && started++ < maxRequests) {
      const roll = Math.random()
      if (roll < 0.5 || acked.size === 0) {
        await deliver(url, newEvent(tag, n++, KNOWN[n % KNOWN.length]))
      } else if (roll < 0.6) {
        unknownSent++
        await deliver(url, newEvent(tag, n++, 'organization.updated'))
      } else if (roll < 0.75) {
        const ids = [...acked]
        const id = ids[Math.floor(Math.random() * ids.length)]
        const answer = await post(url, signed(id, bodies.get(id)), bodies.get(id))
        count(answer)
        if (answer.status === 200 && answer.text.includes('"duplicate":true')) stats.duplicates++
        else if (answer.status !== 409) stats.unexpected.push(`duplicate ${id}: ${answer.status} ${answer.text.slice(0, 100)}`)
      } else {
        const id = `${tag}-invalid-${n++}`
        const make = INVALID[n % INVALID.length]
        const { headers, body, ignored } = make(id, JSON.stringify({ id, type: 'email.bounced', created_at: '', data: { id: 'x' } }))
        const answer = await post(url, headers, body)
        count(answer)
        if (ignored) {
          if (answer.status === 200 && answer.text.includes('"ignored":"invalid_envelope"')) stats.ignored++
          else stats.unexpected.push(`signed non-envelope ${id}: ${answer.status} ${answer.text.slice(0, 100)}`)
        } else if (answer.status >= 400 && answer.status < 500) stats.rejects++
        else stats.unexpected.push(`invalid ${id}: ${answer.status}`)
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  process.send({ type: 'soak-done', ...stats, created: bodies.size, unknownSent, acked: [...acked], unacked: [...unacked] })
}

let stopping = false
async function flood({ url, concurrency, tag }) {
  let n = 0
  const progress = setInterval(() => process.send({ type: 'progress', acked: acked.size }), 100)
  const worker = async () => {
    while (!stopping) {
      const id = newEvent(tag, n++, KNOWN[n % KNOWN.length])
      const answer = await post(url, signed(id, bodies.get(id)), bodies.get(id))
      count(answer)
      if (answer.status === 200) acked.add(id)
      else {
        unacked.add(id)
        // The receiver is gone: do not spin.
        if (answer.status === 0) await sleep(20)
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  clearInterval(progress)
  process.send({ type: 'flood-done', created: bodies.size, acked: [...acked], unacked: [...unacked] })
}

async function redeliver({ url }) {
  const pending = [...unacked]
  const before = { ...stats, status: { ...stats.status } }
  // A few at a time, as the sender's retries would arrive.
  const queue = pending.slice()
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) await deliver(url, id)
    }),
  )
  process.send({
    type: 'redeliver-done',
    redelivered: pending.length,
    requests: stats.requests - before.requests,
    acked: [...acked],
    unacked: [...unacked],
    unexpected: stats.unexpected,
  })
}

process.on('message', (message) => {
  if (message === 'stop') stopping = true
  else if (message.cmd === 'soak') void soak(message)
  else if (message.cmd === 'flood') void flood(message)
  else if (message.cmd === 'redeliver') void redeliver(message)
})
process.send({ type: 'ready' })
