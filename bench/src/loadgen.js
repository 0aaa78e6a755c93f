/**
 * The load generator process (IPC child of the HTTP benchmark, pinned to its own core).
 * `{ type: 'prepare', tool, port, kind, size, connections, seconds }` builds a pre-signed pool
 * before the round (untimed) and answers `prepared`; `{ type: 'go' }` runs the round and answers
 * `result` with the figures and this process's own CPU use, so a saturated load generator shows.
 *
 * Tools: `raw` is the closed loop of rawclient.js for `seconds` (or until the pool is used up);
 * `autocannon` is the cross-check: autocannon sends exactly the pool (fixed count), timed end to end.
 */
import { performance } from 'node:perf_hooks'
import autocannon from 'autocannon'
import { buildPool, rawRequest } from './payloads.js'
import { runClosedLoop } from './rawclient.js'

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

process.on('message', async (message) => {
  try {
    if (message.type === 'prepare') {
      const start = performance.now()
      const shape = message.tool === 'raw' ? (delivery) => rawRequest(delivery, message.port) : (delivery) => delivery
      prepared = { ...message, pool: buildPool({ kind: message.kind, size: message.size }, shape) }
      process.send({ type: 'prepared', buildMs: performance.now() - start, size: prepared.pool.length })
    } else if (message.type === 'go') {
      const { tool, port, pool, connections, seconds } = prepared
      const cpu = process.cpuUsage()
      const result =
        tool === 'raw' ? await runClosedLoop({ port, pool, connections, seconds }) : await runAutocannon({ port, pool, connections })
      const used = process.cpuUsage(cpu)
      prepared = undefined
      process.send({ type: 'result', ...result, loadBusy: (used.user + used.system) / 1000 / result.elapsedMs })
    }
  } catch (error) {
    process.send({ type: 'error', message: String(error?.stack ?? error) })
  }
})
process.on('disconnect', () => process.exit(0))
