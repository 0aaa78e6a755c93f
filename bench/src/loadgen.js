/**
 * The load generator process (IPC child of the HTTP benchmark, pinned to its own core).
 * `{ type: 'prepare', tool, port, kind, size, connections, seconds }` builds a pre-signed pool
 * before the round (untimed) and answers `prepared`; `{ type: 'go' }` runs the round and answers
 * `result` with the figures and this process's own CPU use, so a saturated load generator shows.
 *
 * Tools: `raw` is the closed loop of rawclient.js for `seconds` (or until the pool is used up);
 * `autocannon` is the cross-check: autocannon sends exactly the pool (fixed count), timed end to end.
 * `copies` (many instances): `ports` several servers, every event sent to two of them
 * (payloads.js buildCopiesPools); the result adds, per event, how its copies were answered.
 */
import { performance } from 'node:perf_hooks'
import autocannon from 'autocannon'
import { buildCopiesPools, buildPool, rawRequest } from './payloads.js'
import { runClosedLoop, runTargets } from './rawclient.js'

let prepared

async function runAutocannon({ port, pool, connections }) {
  let next = 0
  let last = 0
  const start = performance.now()
  const instance = autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    amount: pool.length,
    // autocannon notices the end on its sampling tick; a short tick keeps that idle time small,
    // and the round is timed to its last answer anyway.
    sampleInt: 50,
    // Never wraps: a reused event would be a cheap duplicate; past the pool, a bare request gets a 401 (flagged).
    requests: [{ method: 'POST', path: '/hooks', setupRequest: (request) => ({ ...request, ...pool[next++] }) }],
  })
  instance.on('response', () => {
    last = performance.now()
  })
  const result = await instance
  const elapsedMs = Math.max(last - start, 1e-3)
  return {
    requests: result.requests.total,
    elapsedMs,
    perSecond: (result.requests.total / elapsedMs) * 1000,
    // autocannon keeps whole milliseconds.
    p50Us: result.latency.p50 * 1000,
    p99Us: result.latency.p99 * 1000,
    statuses: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, { count }]) => [code, count])),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    poolExhausted: next > pool.length,
  }
}

/** The copies round: every answer noted per event; the ids of events with at least one 2xx come back. */
async function runCopies({ ports, connections, seconds, built }) {
  const { pools, eventOf, ids } = built
  const answers = new Uint8Array(ids.length) // answered copies
  const ok = new Uint8Array(ids.length) // 2xx copies
  let inFlight = 0
  const result = await runTargets({
    targets: ports.map((port, j) => ({ port, pool: pools[j], connections })),
    seconds,
    onAnswer(t, index, status) {
      const k = eventOf[t][index]
      answers[k]++
      if (status >= 200 && status < 300) ok[k]++
      else if (status === 409) inFlight++
    },
  })
  const acked = []
  let bothAnswered = 0
  let unacked = 0
  for (let k = 0; k < ids.length; k++) {
    if (ok[k] > 0) acked.push(ids[k])
    else if (answers[k] > 0) unacked++
    if (answers[k] === 2) bothAnswered++
  }
  return { ...result, acked, bothAnswered, unacked, inFlight }
}

process.on('message', async (message) => {
  try {
    if (message.type === 'prepare') {
      const start = performance.now()
      if (message.tool === 'copies') {
        prepared = {
          ...message,
          built: buildCopiesPools({ instances: message.ports.length, events: message.size, lag: message.lag, ports: message.ports }),
        }
        process.send({ type: 'prepared', buildMs: performance.now() - start, size: message.size })
        return
      }
      const shape = message.tool === 'raw' ? (delivery) => rawRequest(delivery, message.port) : (delivery) => delivery
      prepared = { ...message, pool: buildPool({ kind: message.kind, size: message.size }, shape) }
      process.send({ type: 'prepared', buildMs: performance.now() - start, size: prepared.pool.length })
    } else if (message.type === 'go') {
      const { tool, port, pool, connections, seconds } = prepared
      const cpu = process.cpuUsage()
      const result =
        tool === 'copies'
          ? await runCopies(prepared)
          : tool === 'raw'
            ? await runClosedLoop({ port, pool, connections, seconds })
            : await runAutocannon({ port, pool, connections })
      const used = process.cpuUsage(cpu)
      prepared = undefined
      process.send({ type: 'result', ...result, loadBusy: (used.user + used.system) / 1000 / result.elapsedMs })
    }
  } catch (error) {
    process.send({ type: 'error', message: String(error?.stack ?? error) })
  }
})
process.on('disconnect', () => process.exit(0))
