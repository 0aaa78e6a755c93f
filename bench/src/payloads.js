/**
 * Payloads shared by the benchmarks: real event JSON padded to an exact size, the secret, and
 * the pre-signed request pools of the HTTP benchmark (built before a round, never in its loop).
 */
import { createHmac, randomUUID } from 'node:crypto'

export const BENCH_SECRET = 'whsec_bench_secret_only_for_benchmarks'

/** A JSON event envelope of exactly `size` bytes (UTF-8), with `id` as its event id. */
export function eventBody(id, size, type = 'email.queued') {
  const base = {
    id,
    type,
    created_at: '2026-11-21T12:00:00.000Z',
    data: { id: `msg_${id}`, to: ['user@example.com'], from: 'shop@example.com', subject: 'Your order has shipped', note: '' },
  }
  const empty = Buffer.byteLength(JSON.stringify(base))
  if (empty > size) throw new Error(`an event needs at least ${empty} bytes, asked for ${size}`)
  base.data.note = 'x'.repeat(size - empty)
  const text = JSON.stringify(base)
  return Buffer.from(text)
}

/** In a duplicates pool, each event's second copy comes this many requests after its first: done by then, not in flight. */
export const DUPLICATE_DISTANCE = 1_000

const templates = new Map()

/** The body of `eventBody` for a 36-character id, with where the id goes; each delivery copies it. */
function template(bodyBytes) {
  let entry = templates.get(bodyBytes)
  if (!entry) {
    const marker = 'Z'.repeat(36)
    const bytes = eventBody(marker, bodyBytes)
    const text = bytes.toString('latin1')
    const offsets = []
    for (let at = text.indexOf(marker); at >= 0; at = text.indexOf(marker, at + 1)) offsets.push(at)
    entry = { bytes, offsets }
    templates.set(bodyBytes, entry)
  }
  return entry
}

/** One distinct, signed ~`bodyBytes` `email.queued` delivery: its headers and body (the same bytes `eventBody` gives). */
export function signedDelivery(bodyBytes = 1024) {
  const id = randomUUID()
  const timestamp = String(Math.floor(Date.now() / 1000))
  const { bytes, offsets } = template(bodyBytes)
  const body = Buffer.from(bytes)
  for (const offset of offsets) body.write(id, offset, 'latin1')
  const signature = createHmac('sha256', BENCH_SECRET).update(`${id}.${timestamp}.`).update(body).digest('hex')
  return {
    body,
    headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature },
  }
}

/** The whole HTTP/1.1 request for a delivery, as bytes ready to write to a socket. */
export function rawRequest({ headers, body }, port) {
  const head =
    `POST /hooks HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
    `webhook-id: ${headers['webhook-id']}\r\nwebhook-timestamp: ${headers['webhook-timestamp']}\r\nwebhook-signature: ${headers['webhook-signature']}\r\n\r\n`
  const request = Buffer.allocUnsafe(head.length + body.length)
  request.write(head, 0, 'latin1')
  body.copy(request, head.length)
  return request
}

/**
 * A pool of `size` deliveries. `distinct`: every event once (random UUIDs, so pools never share an
 * id). `duplicates`: every event exactly twice, the second copy DUPLICATE_DISTANCE requests after
 * the first (less in a pool smaller than twice that) (byte-identical, as a re-delivery of the same signed request). `shape` maps each
 * delivery to what the load generator sends.
 */
export function buildPool({ kind, size, bodyBytes = 1024 }, shape) {
  const pool = []
  if (kind === 'duplicates') {
    // A pool too small for the usual distance (a smoke run) keeps the pattern at a shorter one.
    const distance = Math.max(1, Math.min(DUPLICATE_DISTANCE, Math.floor(size / 2)))
    while (pool.length < size) {
      const block = Array.from({ length: distance }, () => shape(signedDelivery(bodyBytes)))
      pool.push(...block, ...block)
    }
    pool.length = size
  } else {
    for (let i = 0; i < size; i++) pool.push(shape(signedDelivery(bodyBytes)))
  }
  return pool
}

/**
 * Pools for several instances where every event goes to two of them (copies, as a load balancer
 * spreads a re-delivery): event k to instance k mod n and its copy to (k + 1) mod n. In each
 * instance's pool originals and copies alternate, the copies `lag` entries later (0: both copies of
 * an event are sent at about the same moment, the hard case for dedup across instances).
 * @returns {{ pools: Buffer[][], eventOf: number[][], ids: string[] }} per instance its requests and
 *   which event each one is; `ids[k]` is event k's id
 */
export function buildCopiesPools({ instances, events, lag = 0, bodyBytes = 1024, ports }) {
  const originals = Array.from({ length: instances }, () => [])
  const copies = Array.from({ length: instances }, () => [])
  const ids = []
  for (let k = 0; k < events; k++) {
    const delivery = signedDelivery(bodyBytes)
    ids.push(delivery.headers['webhook-id'])
    const first = k % instances
    const second = (k + 1) % instances
    originals[first].push([rawRequest(delivery, ports[first]), k])
    copies[second].push([rawRequest(delivery, ports[second]), k])
  }
  const pools = []
  const eventOf = []
  for (let j = 0; j < instances; j++) {
    const merged = []
    const o = originals[j]
    const c = copies[j]
    for (let i = 0; i < o.length; i++) {
      merged.push(o[i])
      if (i >= lag && i - lag < c.length) merged.push(c[i - lag])
    }
    for (let i = Math.max(0, o.length - lag); i < c.length; i++) merged.push(c[i])
    pools.push(merged.map(([request]) => request))
    eventOf.push(merged.map(([, k]) => k))
  }
  return { pools, eventOf, ids }
}
