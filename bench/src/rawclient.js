/**
 * The primary load generator: a closed loop of keep-alive connections over raw sockets. Each
 * connection writes the next pre-built request (bytes from the pool, nothing computed per
 * request), waits for the whole answer, records its status and latency (µs), and sends the
 * next, until the time is up or the pool is used up; the round is timed from the first write
 * to the last answer. Understands answers framed by content-length or chunked encoding.
 */
import { connect } from 'node:net'
import { performance } from 'node:perf_hooks'

const HEADER_END = Buffer.from('\r\n\r\n')

/** Length of the first complete HTTP response in `buf`, or -1 while incomplete. Sets `out.status`. */
export function responseLength(buf, out) {
  const headerEnd = buf.indexOf(HEADER_END)
  if (headerEnd < 0) return -1
  const head = buf.toString('latin1', 0, headerEnd).toLowerCase()
  out.status = Number.parseInt(head.slice(9, 12), 10)
  const length = /\r\ncontent-length:\s*(\d+)/.exec(head)
  if (length) {
    const total = headerEnd + 4 + Number(length[1])
    return buf.length >= total ? total : -1
  }
  if (!/\r\ntransfer-encoding:[^\r]*chunked/.test(head)) return headerEnd + 4 // no body (e.g. 204)
  let at = headerEnd + 4
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', at)
    if (lineEnd < 0) return -1
    const size = Number.parseInt(buf.toString('latin1', at, lineEnd), 16)
    if (size === 0) {
      const end = buf.indexOf(HEADER_END, lineEnd)
      return end < 0 ? -1 : end + 4
    }
    at = lineEnd + 2 + size + 2
    if (at > buf.length) return -1
  }
}

function percentile(sorted, p) {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]
}

/** Opens `count` connections before the clock starts. */
function openConnections(port, count) {
  const opening = Array.from({ length: count }, () => {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1', noDelay: true }, () => resolve(socket))
      socket.once('error', reject)
    })
  })
  return Promise.all(opening)
}

/**
 * Runs the closed loop against one server: `connections` keep-alive connections share `pool`.
 * @param {{ port: number, pool: Buffer[], connections: number, seconds: number }} options
 */
export function runClosedLoop({ port, pool, connections, seconds }) {
  return runTargets({ targets: [{ port, pool, connections }], seconds })
}

/**
 * Runs the closed loop against several servers at once: each target's connections share its own
 * pool, in order; `onAnswer(target, index, status)` (optional) hears every answer. The round ends
 * when the time is up or a pool is used up.
 * @param {{ targets: { port: number, pool: Buffer[], connections: number }[], seconds: number, onAnswer?: Function }} options
 */
export async function runTargets({ targets, seconds, onAnswer }) {
  const total = targets.reduce((sum, target) => sum + target.pool.length, 0)
  const latencies = new Float64Array(total)
  const statuses = {}
  let done = 0
  let errors = 0
  let start = 0
  let last = 0
  let deadline = 0
  let exhausted = false
  const opened = await Promise.all(targets.map((target) => openConnections(target.port, target.connections)))
  const sockets = opened.flat()
  await new Promise((resolve) => {
    let open = sockets.length
    const finish = (socket) => {
      if (socket.finished) return
      socket.finished = true
      socket.destroy()
      if (--open === 0) resolve()
    }
    targets.forEach((target, t) => {
      target.next = 0
      for (const socket of opened[t]) {
        let pending = null
        let sentAt = 0
        let index = -1
        const out = { status: 0 }
        const send = () => {
          if (target.next >= target.pool.length) exhausted = true
          if (exhausted || performance.now() >= deadline) return finish(socket)
          sentAt = performance.now()
          index = target.next++
          socket.write(target.pool[index])
        }
        socket.removeAllListeners('error')
        socket.on('error', () => {
          errors++
          finish(socket)
        })
        socket.on('close', () => {
          if (!socket.finished) errors++ // the server closed a connection mid-round
          finish(socket)
        })
        socket.on('data', (chunk) => {
          pending = pending === null ? chunk : Buffer.concat([pending, chunk])
          const length = responseLength(pending, out)
          if (length < 0) return
          pending = length < pending.length ? pending.subarray(length) : null
          last = performance.now()
          latencies[done++] = (last - sentAt) * 1000
          statuses[out.status] = (statuses[out.status] ?? 0) + 1
          onAnswer?.(t, index, out.status)
          send()
        })
        socket.kick = send
      }
    })
    start = performance.now()
    deadline = start + seconds * 1000
    for (const socket of sockets) socket.kick()
  })
  const sorted = latencies.subarray(0, done).sort()
  const elapsedMs = Math.max(last - start, 1e-3)
  let non2xx = 0
  for (const [status, count] of Object.entries(statuses)) if (status < 200 || status > 299) non2xx += count
  return {
    requests: done,
    elapsedMs,
    perSecond: (done / elapsedMs) * 1000,
    p50Us: percentile(sorted, 50),
    p99Us: percentile(sorted, 99),
    maxUs: done > 0 ? sorted[done - 1] : 0,
    statuses,
    non2xx,
    errors,
    poolExhausted: exhausted,
  }
}
