// The load of the soak (soak.ts): signed deliveries to one receiver on 127.0.0.1 at a steady rate,
// distinct events plus 10 % duplicates (a fresh signature over an event acknowledged within the
// last half retention: older ones the store may have forgotten, by design, and would handle
// again), each new event retried until acknowledged (bounded), over keep-alive connections. It
// keeps only those recent ids, so it stays flat itself. Commands over IPC:
//   { cmd: 'start', url, perSecond, duplicates, retentionMs, tag }  starts;  { cmd: 'report' } → { type: 'report', ... } (since the last one)
//   { cmd: 'stop' } → { type: 'stopped', ... }
// Exits when the parent goes away.
import { createHmac } from 'node:crypto'
import http from 'node:http'
import { TEST_SECRET } from '@email-webhooks/core/testing'

process.on('disconnect', () => process.exit(0))
const agent = new http.Agent({ keepAlive: true, maxSockets: 32 })
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const TYPES = ['email.queued', 'email.submitted', 'email.bounced', 'email.recipient_accepted', 'email.complained']
const MAX_TRIES = 50

function body(id, n) {
  return JSON.stringify({ id, type: TYPES[n % TYPES.length], created_at: new Date().toISOString(), data: { id: `email-${n}` } })
}

function post(url, id, payload) {
  const ts = String(Math.floor(Date.now() / 1000))
  const signature = createHmac('sha256', TEST_SECRET).update(`${id}.${ts}.`).update(payload).digest('hex')
  const headers = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    'webhook-id': id,
    'webhook-timestamp': ts,
    'webhook-signature': signature,
  }
  const started = performance.now()
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', headers, agent }, (res) => {
      const chunks = []
      res.on('data', (chunk) => chunks.push(chunk))
      res.on('end', () => {
        let code
        if (res.statusCode !== 200)
          try {
            code = JSON.parse(Buffer.concat(chunks).toString()).error?.code
          } catch {}
        resolve({ status: res.statusCode, code, ms: performance.now() - started })
      })
      res.on('error', () => resolve({ status: 0, ms: performance.now() - started }))
    })
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')))
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }))
    req.end(payload)
  })
}

let interval = fresh()
const total = { events: 0, acked: 0, duplicates: 0, gaveUp: 0, non2xx: 0 }
const recent = [] // [at, id, payload] of events acknowledged within the last half retention
let recentMs = 60_000
let stopping = false
let inFlight = 0

function fresh() {
  return { requests: 0, events: 0, duplicates: 0, statuses: {}, times: [] }
}

function count(answer) {
  interval.requests++
  const key = answer.code ? `${answer.status} ${answer.code}` : String(answer.status)
  interval.statuses[key] = (interval.statuses[key] ?? 0) + 1
  interval.times.push(answer.ms)
  if (answer.status !== 200) total.non2xx++
}

async function deliverNew(url, tag, n) {
  const id = `${tag}-${n}`
  const payload = body(id, n)
  total.events++
  interval.events++
  // A stop lets the events already sent finish their retries: only new ones stop.
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const answer = await post(url, id, payload)
    count(answer)
    if (answer.status === 200) {
      total.acked++
      recent.push([Date.now(), id, payload])
      while (recent.length > 0 && recent[0][0] < Date.now() - recentMs) recent.shift()
      return
    }
    await sleep(answer.status === 409 ? 1000 : 200)
  }
  total.gaveUp++
}

async function deliverDuplicate(url) {
  while (recent.length > 1 && recent[0][0] < Date.now() - recentMs) recent.shift()
  const [, id, payload] = recent[Math.floor(Math.random() * recent.length)]
  total.duplicates++
  interval.duplicates++
  count(await post(url, id, payload))
}

async function start({ url, perSecond, duplicates, retentionMs, tag }) {
  recentMs = retentionMs / 2
  const began = performance.now()
  for (let n = 0; !stopping; n++) {
    const wait = began + (n * 1000) / perSecond - performance.now()
    if (wait > 0) await sleep(wait)
    if (inFlight > 256) continue // the receiver is stuck: do not pile up
    inFlight++
    const job = recent.length > 0 && Math.random() < duplicates ? deliverDuplicate(url) : deliverNew(url, tag, n)
    job.finally(() => inFlight--)
  }
}

function percentile(values, p) {
  if (values.length === 0) return 0
  const sorted = values.sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}

process.on('message', async (message) => {
  if (message.cmd === 'start') void start(message)
  else if (message.cmd === 'report' || message.cmd === 'stop') {
    if (message.cmd === 'stop') {
      stopping = true
      while (inFlight > 0) await sleep(50)
    }
    const { requests, events, duplicates, statuses, times } = interval
    interval = fresh()
    process.send({
      type: message.cmd === 'stop' ? 'stopped' : 'report',
      requests,
      events,
      duplicates,
      statuses,
      p99Ms: Math.round(percentile(times, 99)),
      total: { ...total },
    })
  }
})
process.send({ type: 'ready' })
