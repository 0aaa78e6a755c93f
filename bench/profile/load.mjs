/**
 * `node load.mjs <port> <count>`: sends `count` distinct pre-signed ~1 KB deliveries over 10
 * keep-alive connections (the bench's raw closed-loop client), then prints the answers' tally and
 * their latency (p50, p99, slowest).
 */
import { buildPool, rawRequest } from '../src/payloads.js'
import { runClosedLoop } from '../src/rawclient.js'

const port = Number(process.argv[2])
const count = Number(process.argv[3])
if (!Number.isInteger(port) || !Number.isInteger(count) || count < 1) {
  console.error('usage: node load.mjs <port> <count>')
  process.exit(2)
}
const pool = buildPool({ kind: 'distinct', size: count }, (delivery) => rawRequest(delivery, port))
const result = await runClosedLoop({ port, pool, connections: 10, seconds: 600 })
const ms = (us) => (us / 1000).toFixed(2)
console.log(
  `${result.requests} requests, ${Math.round(result.perSecond)}/s, p50 ${ms(result.p50Us)} ms, p99 ${ms(result.p99Us)} ms, max ${ms(result.maxUs)} ms, non-2xx ${result.non2xx}, errors ${result.errors}`,
)
