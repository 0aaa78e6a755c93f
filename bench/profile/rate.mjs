/**
 * `node rate.mjs <port> <per-second> <seconds>`: an open loop, as a sender delivers: distinct
 * pre-signed ~1 KB deliveries are due at a steady rate whether or not earlier ones were answered,
 * sent over up to 200 keep-alive connections (a due delivery waits for a free one). Each answer's
 * latency counts from when its delivery was due, not when it was written, so a server that stops
 * for 300 ms delays every delivery due meanwhile (a closed loop would count 10 of them). Prints
 * the answers' tally and latency (p50, p99, p99.9, slowest).
 */
import { connect } from 'node:net'
import { buildPool, rawRequest } from '../src/payloads.js'
import { responseLength } from '../src/rawclient.js'

const [port, rate, seconds] = process.argv.slice(2).map(Number)
if (!Number.isInteger(port) || !(rate > 0) || !(seconds > 0)) {
  console.error('usage: node rate.mjs <port> <per-second> <seconds>')
  process.exit(2)
}
const MAX_CONNECTIONS = 200
const total = Math.round(rate * seconds)
const pool = buildPool({ kind: 'distinct', size: total }, (delivery) => rawRequest(delivery, port))
const latencies = []
let non2xx = 0
let errors = 0
let next = 0
const idle = []
/** Connections open now, and the most at once. */
let opened = 0
let most = 0
let start = 0

function open() {
  most = Math.max(most, ++opened)
  const socket = connect({ port, host: '127.0.0.1', noDelay: true })
  const state = { socket, buf: Buffer.alloc(0), dueAt: 0, busy: false, closed: false }
  socket.on('data', (chunk) => {
    state.buf = state.buf.length === 0 ? chunk : Buffer.concat([state.buf, chunk])
    const out = {}
    const length = responseLength(state.buf, out)
    if (length < 0) return
    state.buf = state.buf.subarray(length)
    state.busy = false
    latencies.push(performance.now() - state.dueAt)
    if (out.status < 200 || out.status > 299) non2xx++
    idle.push(state)
    send()
  })
  socket.on('error', () => {})
  // The server closes a keep-alive connection idle too long (Node: 5 s): a delivery on it is lost.
  socket.on('close', () => {
    state.closed = true
    opened--
    if (state.busy) errors++
  })
  return state
}

/** Writes every delivery due now on a free connection (opening one if all are busy). */
function send() {
  const now = performance.now()
  while (next < total) {
    const dueAt = start + (next * 1000) / rate
    if (dueAt > now) break
    let connection = idle.pop()
    while (connection?.closed) connection = idle.pop()
    connection ??= opened < MAX_CONNECTIONS ? open() : undefined
    if (!connection) break
    connection.dueAt = dueAt
    connection.busy = true
    connection.socket.write(pool[next++])
  }
}

for (let i = 0; i < 20; i++) idle.push(open())
await new Promise((resolve) => setTimeout(resolve, 100))
start = performance.now()
const timer = setInterval(send, 1)
await new Promise((resolve) => {
  const check = setInterval(() => {
    if (latencies.length + errors >= total || performance.now() > start + seconds * 1000 + 30_000) {
      clearInterval(check)
      resolve()
    }
  }, 50)
})
clearInterval(timer)
latencies.sort((a, b) => a - b)
const at = (q) => (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0).toFixed(2)
console.log(
  `${latencies.length} answers at ${rate}/s (${total} due), p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, p99.9 ${at(0.999)} ms, max ${at(1)} ms, non-2xx ${non2xx}, lost ${errors}, connections ${most}`,
)
process.exit(0)
