/**
 * Hostile HTTP against every adapter: 1,000 generated requests each in `npm test`, 3,000 in
 * `npm run test:all` (50,000 with RELIABILITY_LONG=1) to Express 5, Hono on @hono/node-server, Fastify 5 and Koa 3 over real
 * listeners on 127.0.0.1, to the Lambda handler behind a function-URL stand-in, and to core's
 * fetch handler. Each request is a fresh signed delivery, sent exact
 * or mutated (bit flips of body and headers, reordered, re-cased, repeated, dropped, empty and
 * huge headers, stale and future timestamps, bodies over the limit, chunked bodies, signed
 * non-envelopes, `__proto__`/`constructor` keys, redeliveries, other methods, garbage).
 *
 * Properties: only an exact valid delivery is handled (once; a redelivery is a 200 duplicate); a
 * signed body that is not an envelope gets 200 `ignored` and runs nothing; nothing gets a 5xx; no uncaught exception; a health request keeps answering
 * during the run; no prototype changes; and nothing emitted (answers, onError arguments,
 * console, stdout/stderr) contains the secret, a signature or a body.
 */
import { createHmac, randomUUID } from 'node:crypto'
import { MemoryDedupStore, type WebhookHandlingError, type WebhookVerificationError } from '@email-webhooks/core'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { ALL_TIERS } from '../support/time.js'
import {
  ADAPTERS,
  type AdapterName,
  collectEmitted,
  LONG,
  printTable,
  prototypeSnapshot,
  type RawRequest,
  type Receiver,
  sleep,
  startReceiver,
} from './support.js'

// 1,000 per adapter (npm test) reach every mutation kind dozens of times, 3,000 (npm run test:all)
// hundreds of times (the property, not the count, is the test); the long run is for rare combinations.
const RUNS = LONG ? 50_000 : ALL_TIERS ? 3_000 : 1_000
const SECRET = 'whsec_reliability_http_secret_7f3a9'
const MAX_BODY = 64 * 1024
const HEALTH_EVERY_MS = 100
const HEALTH_TIMEOUT_MS = 5_000
const TYPES = ['email.bounced', 'email.queued', 'email.complained', 'organization.updated', 'email.some_future_type']
const encoder = new TextEncoder()

type Expect = 'new' | 'duplicate' | 'ignored' | 'reject' | 'reject-or-close'

type Mutation =
  | { m: 'exact' | 'upper' | 'chunked' | 'protoKeys' | 'redeliver' | 'repeatContentType' }
  | { m: 'nameCase'; mask: number }
  | { m: 'reorder'; seed: number }
  | { m: 'extra'; headers: [string, string][] }
  | { m: 'flipBody'; index: number; bit: number }
  | { m: 'flipHeader'; which: number; index: number; bit: number }
  | { m: 'repeat' | 'drop' | 'empty'; which: number }
  | { m: 'hugeHeader'; which: number; size: number }
  | { m: 'hugeBody'; size: number }
  | { m: 'skew'; seconds: number }
  | { m: 'signedGarbage'; body: string }
  | { m: 'method'; method: string }
  | { m: 'garbage'; headers: [string, string][]; body: Uint8Array }

const which = fc.integer({ min: 0, max: 2 })
const headerName = fc.stringMatching(/^x-[a-z0-9-]{1,20}$/)
const headerValue = fc.stringMatching(/^[!-~][ -~]{0,80}[!-~]$/)
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.constantFrom<Mutation>(
      { m: 'exact' },
      { m: 'upper' },
      { m: 'chunked' },
      { m: 'protoKeys' },
      { m: 'redeliver' },
      { m: 'repeatContentType' },
    ),
  },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('nameCase' as const), mask: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('reorder' as const), seed: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ m: fc.constant('extra' as const), headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 30 }) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ m: fc.constant('flipBody' as const), index: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ m: fc.constant('flipHeader' as const), which, index: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  },
  { weight: 2, arbitrary: fc.record({ m: fc.constantFrom('repeat' as const, 'drop' as const, 'empty' as const), which }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('hugeHeader' as const), which, size: fc.integer({ min: 300, max: 40_000 }) }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('hugeBody' as const), size: fc.integer({ min: MAX_BODY + 1, max: 4 * MAX_BODY }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      m: fc.constant('skew' as const),
      seconds: fc.oneof(fc.integer({ min: -100_000, max: -400 }), fc.integer({ min: 400, max: 100_000 })),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      m: fc.constant('signedGarbage' as const),
      body: fc.oneof(fc.string({ maxLength: 200 }), fc.json({ maxDepth: 2 }), fc.constant(''), fc.constant('{"id":"other"}')),
    }),
  },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('method' as const), method: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH') }) },
  {
    weight: 3,
    arbitrary: fc.record({
      m: fc.constant('garbage' as const),
      headers: fc.array(
        fc.tuple(
          fc.oneof(fc.constantFrom('webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type'), headerName),
          fc.oneof(headerValue, fc.stringMatching(/^[0-9a-f]{64}$/), fc.stringMatching(/^[0-9]{1,11}$/)),
        ),
        { maxLength: 8 },
      ),
      body: fc.uint8Array({ maxLength: 400 }),
    }),
  },
)

const sign = (id: string, ts: string, body: Uint8Array) => createHmac('sha256', SECRET).update(`${id}.${ts}.`).update(body).digest('hex')

/** XOR one bit of one character, keeping a value an HTTP client may send (else bit 7, which always is). */
function flipChar(text: string, index: number, bit: number): string {
  const at = index % text.length
  const code = text.charCodeAt(at)
  let flipped = code ^ (1 << bit)
  if ((flipped < 0x20 && flipped !== 0x09) || flipped === 0x7f) flipped = code ^ 0x80
  return text.slice(0, at) + String.fromCharCode(flipped) + text.slice(at + 1)
}

interface Case {
  request: RawRequest
  expect: Expect
  eventId?: string
  sensitive: string[]
}

interface State {
  accepted: { id: string; body: Uint8Array }[]
  caseNo: number
}

function build(m: Mutation, type: string, state: State): Case {
  const canary = `canary-${(state.caseNo++).toString(36)}`
  let id: string = randomUUID()
  const event: Record<string, unknown> = {
    id,
    type,
    created_at: new Date().toISOString(),
    data: { id: randomUUID(), to: `${canary}@example.test` },
  }
  if (m.m === 'protoKeys') {
    // JSON.parse makes these own keys; the check is that no prototype changes.
    event.data = JSON.parse(`{"id":"e","__proto__":{"polluted":"${canary}"},"constructor":{"prototype":{"polluted":true}}}`)
  }
  let bodyText = JSON.stringify(event)
  if (m.m === 'protoKeys') bodyText = bodyText.replace('"data":{', '"__proto__":{"isAdmin":true},"data":{')
  let body: Uint8Array = encoder.encode(bodyText)
  let expect: Expect = 'new'
  if (m.m === 'redeliver' && state.accepted.length > 0) {
    const earlier = state.accepted[state.caseNo % state.accepted.length] as { id: string; body: Uint8Array }
    id = earlier.id
    body = earlier.body
    expect = 'duplicate'
  }
  let ts = String(Math.floor(Date.now() / 1000))
  if (m.m === 'skew') {
    ts = String(Number(ts) + m.seconds)
    expect = 'reject'
  }
  if (m.m === 'signedGarbage') {
    // Signed and in the window but not an envelope: acknowledged (the sender would resend the same
    // bytes until it disables the endpoint), recorded, reported, and no handler runs.
    body = encoder.encode(m.body)
    expect = 'ignored'
  }
  const signature = sign(id, ts, body)
  const sensitive = [SECRET, signature, canary]
  const headers: [string, string][] = [
    ['content-type', 'application/json'],
    ['webhook-id', id],
    ['webhook-timestamp', ts],
    ['webhook-signature', signature],
  ]
  let method = 'POST'
  const at = (w: number) => w + 1
  switch (m.m) {
    case 'upper':
      ;(headers[3] as [string, string])[1] = signature.toUpperCase()
      break
    case 'chunked':
      headers.push(['transfer-encoding', 'chunked'])
      break
    case 'repeatContentType':
      headers.push(['content-type', 'text/plain'])
      break
    case 'nameCase':
      for (const [k, header] of headers.entries())
        header[0] = [...header[0]].map((ch, i) => ((m.mask >> (i + k)) & 1 ? ch.toUpperCase() : ch)).join('')
      break
    case 'reorder': {
      let seed = m.seed + 1
      for (let i = headers.length - 1; i > 0; i--) {
        seed = (seed * 48_271) % 2_147_483_647
        const j = seed % (i + 1)
        ;[headers[i], headers[j]] = [headers[j] as [string, string], headers[i] as [string, string]]
      }
      break
    }
    case 'extra':
      headers.push(...m.headers)
      break
    case 'flipBody': {
      const copy = body.slice()
      const index = m.index % copy.byteLength
      copy[index] = (copy[index] as number) ^ (1 << m.bit)
      body = copy
      expect = 'reject'
      break
    }
    case 'flipHeader': {
      const header = headers[at(m.which)] as [string, string]
      const before = header[1]
      header[1] = flipChar(before, m.index, m.bit)
      // Only a case flip of a hex letter keeps the signature's bytes (accepted by design); a new
      // value with white space at an end is trimmed by HTTP, which still changes it.
      expect = m.which === 2 && header[1].toLowerCase() === before.toLowerCase() ? 'new' : 'reject'
      break
    }
    case 'repeat':
      headers.push([...(headers[at(m.which)] as [string, string])])
      expect = 'reject'
      break
    case 'drop':
      headers.splice(at(m.which), 1)
      expect = 'reject'
      break
    case 'empty':
      ;(headers[at(m.which)] as [string, string])[1] = ''
      expect = 'reject'
      break
    case 'hugeHeader':
      // Past 16 KiB the Node servers answer 431 and may close before the client reads it.
      ;(headers[at(m.which)] as [string, string])[1] = (m.which === 1 ? '7' : 'f').repeat(m.size)
      expect = 'reject-or-close'
      break
    case 'hugeBody': {
      const big = new Uint8Array(m.size).fill(0x20)
      big.set(body)
      body = big
      ;(headers[3] as [string, string])[1] = sign(id, ts, body)
      sensitive.push((headers[3] as [string, string])[1])
      expect = 'reject-or-close'
      break
    }
    case 'method':
      method = m.method
      body = new Uint8Array(0)
      expect = 'reject'
      break
    case 'garbage':
      headers.length = 0
      headers.push(...m.headers)
      body = m.body.byteLength > 0 ? encoder.encode(`${canary}:${Buffer.from(m.body).toString('base64')}`) : m.body
      expect = 'reject'
      break
  }
  if (body.byteLength >= 16) sensitive.push(Buffer.from(body.subarray(0, 200)).toString('utf8'))
  const result: Case = { request: { method, headers, body }, expect, sensitive }
  if (expect === 'new' || expect === 'duplicate') result.eventId = id
  return result
}

const figures: Record<string, string | number>[] = []
afterAll(() => printTable(`Hostile HTTP: ${RUNS.toLocaleString('en-US')} generated requests per adapter`, figures))

describe.each(ADAPTERS)('hostile HTTP against %s', (name: AdapterName) => {
  it(`answers ${RUNS.toLocaleString('en-US')} generated requests: only exact deliveries accepted, no 5xx, nothing leaked, always responsive`, async () => {
    const handled = new Map<string, number>()
    const onErrorText: string[] = []
    const prototypesBefore = prototypeSnapshot()
    const handler = (event: { id: string; data: object }) => {
      if (Object.getPrototypeOf(event.data) !== Object.prototype) throw new Error('data lost its prototype')
      handled.set(event.id, (handled.get(event.id) ?? 0) + 1)
    }
    const receiver: Receiver = await startReceiver(
      name,
      SECRET,
      { 'email.bounced': handler, 'email.queued': handler, 'email.complained': handler },
      {
        store: new MemoryDedupStore(),
        maxBodyBytes: MAX_BODY,
        onUnknown: handler,
        onError: (error: WebhookVerificationError | WebhookHandlingError, info: unknown) => {
          onErrorText.push(
            `${error.name} ${error.code} ${error.message} ${String(error.cause ?? '')} ${error.stack} ${JSON.stringify(info)}`,
          )
        },
      },
    )
    const uncaught: unknown[] = []
    const onUncaught = (error: unknown) => void uncaught.push(error)
    process.on('uncaughtException', onUncaught)
    process.on('unhandledRejection', onUncaught)
    const emitted = collectEmitted()
    const answers: string[] = []
    const statuses = new Map<string, number>()
    const tally = (key: string) => statuses.set(key, (statuses.get(key) ?? 0) + 1)
    const health = { count: 0, maxMs: 0, failures: [] as string[] }
    let running = true
    const pinger = (async () => {
      while (running) {
        try {
          health.maxMs = Math.max(health.maxMs, await receiver.health(HEALTH_TIMEOUT_MS))
          health.count++
        } catch (error) {
          health.failures.push(String(error))
        }
        await sleep(HEALTH_EVERY_MS)
      }
    })()
    const state: State = { accepted: [], caseNo: 0 }
    const started = performance.now()
    try {
      await fc.assert(
        fc.asyncProperty(mutation, fc.constantFrom(...TYPES), async (m, type) => {
          const c = build(m, type, state)
          let status: number
          let text = ''
          try {
            const answer = await receiver.send(c.request, 10_000)
            status = answer.status
            text = answer.text
          } catch (error) {
            if (c.expect !== 'reject-or-close') throw error
            status = 0
          }
          answers.push(text)
          tally(status === 0 ? 'closed by server' : String(status))
          if (status >= 500) throw new Error(`${m.m} got ${status}: ${text}`)
          for (const secret of c.sensitive) if (text.includes(secret)) throw new Error(`the answer to ${m.m} leaks input`)
          if (c.expect === 'new' || c.expect === 'duplicate') {
            const expected = c.expect === 'new' ? '{"ok":true}' : '{"ok":true,"duplicate":true}'
            if (status !== 200 || text !== expected) throw new Error(`${m.m} should be accepted as ${c.expect}, got ${status} ${text}`)
            if (c.expect === 'new') state.accepted.push({ id: c.eventId as string, body: c.request.body })
          } else if (c.expect === 'ignored') {
            const ignored = '{"ok":true,"ignored":"invalid_envelope"}'
            if (status !== 200 || text !== ignored) throw new Error(`${m.m} should be acknowledged as ignored, got ${status} ${text}`)
          } else if (status !== 0 && (status < 400 || status >= 500)) {
            throw new Error(`${m.m} must be refused with 4xx, got ${status} ${text}`)
          }
        }),
        { numRuns: RUNS, seed: Number(process.env.RELIABILITY_SEED ?? Date.now() % 2 ** 31) },
      )
    } finally {
      running = false
      await pinger
      emitted.stop()
      process.off('uncaughtException', onUncaught)
      process.off('unhandledRejection', onUncaught)
      await receiver.close()
    }
    const seconds = (performance.now() - started) / 1000

    // Every accepted event was handled exactly once; no refused request ran a handler.
    const accepted = new Set(state.accepted.map((a) => a.id))
    expect([...handled.values()].filter((n) => n !== 1)).toEqual([])
    expect(new Set(handled.keys())).toEqual(accepted)

    // The leak scan: everything emitted during the run.
    const all = [answers.join('\n'), onErrorText.join('\n'), emitted.text()].join('\n')
    expect(all.includes(SECRET)).toBe(false)
    expect(all.match(/canary-[0-9a-z]+/)).toBeNull()
    expect(all.match(/[0-9a-fA-F]{64}/)).toBeNull()
    expect(onErrorText.length).toBeGreaterThan(RUNS / 4)

    expect(uncaught).toEqual([])
    expect(health.failures).toEqual([])
    expect(health.count).toBeGreaterThan(0)
    expect(prototypeSnapshot()).toBe(prototypesBefore)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined()

    const count = (prefix: string) => [...statuses].filter(([k]) => k.startsWith(prefix)).reduce((s, [, n]) => s + n, 0)
    figures.push({
      adapter: name,
      requests: RUNS,
      'accepted (200)': count('200'),
      '4xx': count('4'),
      '5xx': count('5'),
      'closed (431/413)': count('closed'),
      handled: handled.size,
      'health pings': health.count,
      'max health ms': Math.round(health.maxMs),
      seconds: Number(seconds.toFixed(1)),
      leaks: 0,
    })
    expect(count('5')).toBe(0)
  }, 600_000)
})
