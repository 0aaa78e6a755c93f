/**
 * The load generator, in its own process: `node load.js '<json options>'`. autocannon with
 * `connections` keep-alive connections; every request is a distinct signed event (signed here,
 * with node:crypto, when autocannon asks for it), or with `duplicateRatio` a byte-identical
 * re-send of an earlier one. A warm-up run precedes the measured run. Prints one JSON line.
 */
import { createHmac, randomUUID } from 'node:crypto'
import autocannon from 'autocannon'
import { BENCH_SECRET, eventBody } from './payloads.js'

const { port, durationSeconds, warmupSeconds, connections = 10, duplicateRatio = 0, bodyBytes = 1024 } = JSON.parse(process.argv[2])
const RECENT = 2_000
// A re-send repeats an event sent at least this many requests earlier: done by then, not in flight.
const SETTLED = 100
const sent = []
let distinct = 0

function freshDelivery() {
  const id = randomUUID()
  const timestamp = String(Math.floor(Date.now() / 1000))
  const body = eventBody(id, bodyBytes)
  const signature = createHmac('sha256', BENCH_SECRET).update(`${id}.${timestamp}.`).update(body).digest('hex')
  const delivery = {
    body,
    headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature },
  }
  sent[distinct % RECENT] = delivery
  distinct++
  return delivery
}

function nextDelivery() {
  if (duplicateRatio > 0 && distinct > SETTLED && Math.random() < duplicateRatio) {
    const age = SETTLED + Math.floor(Math.random() * (Math.min(distinct, RECENT) - SETTLED))
    return sent[(distinct - 1 - age) % RECENT]
  }
  return freshDelivery()
}

function run(duration) {
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration,
    requests: [
      {
        method: 'POST',
        path: '/hooks',
        setupRequest(request) {
          const { headers, body } = nextDelivery()
          return { ...request, headers, body }
        },
      },
    ],
  })
}

if (warmupSeconds > 0) await run(warmupSeconds)
const result = await run(durationSeconds)
process.stdout.write(
  `${JSON.stringify({
    requests: result.requests.total,
    perSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    distinct,
  })}\n`,
)
