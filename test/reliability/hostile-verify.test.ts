/**
 * Hostile input against `verifyWebhook`: 100,000 generated cases (1,000,000 with
 * RELIABILITY_LONG=1). Each case starts from a delivery signed here with node:crypto (an
 * oracle independent of the package) and mutates it: single-bit flips of the body and of each
 * header, re-signed timestamps across the window, header-name case, repeated and missing
 * headers, empty and huge values, wrong and rotated secrets, bodies that are not bytes, and
 * plain garbage. Only an exact valid delivery (or one that differs only in the case of the
 * hex signature or of header names) may verify; every refusal is a WebhookVerificationError
 * whose message holds no secret, signature or body.
 */
import { createHmac } from 'node:crypto'
import { verifyWebhook, WebhookVerificationError } from '@email-webhooks/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { LONG, printTable } from './support.js'

const RUNS = LONG ? 1_000_000 : 100_000
const NOW_MS = 1_767_225_600_000
const NOW_S = NOW_MS / 1000
const SECRET = 'whsec_reliability_verify_secret_4b1d'
const OTHER = 'whsec_reliability_other_secret_9c2e'
const NAMES = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const

type Mutation =
  | { m: 'exact' | 'upper' | 'rotation' | 'fetchHeaders' | 'wrongSecret' }
  | { m: 'shift'; delta: number }
  | { m: 'flipBody'; index: number; bit: number }
  | { m: 'flipHeader'; which: number; index: number; bit: number }
  | { m: 'nameCase'; which: number; mask: number }
  | { m: 'repeat'; which: number; copies: number }
  | { m: 'drop' | 'empty'; which: number }
  | { m: 'huge'; which: number; size: number }
  | { m: 'hugeBody'; size: number }
  | { m: 'truncate'; keep: number }
  | { m: 'append'; extra: Uint8Array }
  | { m: 'notBytes'; value: unknown }
  | { m: 'garbage'; headers: Record<string, string>; body: string | Uint8Array }

const which = fc.integer({ min: 0, max: 2 })
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<Mutation>({ m: 'exact' }, { m: 'upper' }, { m: 'rotation' }, { m: 'fetchHeaders' }) },
  { weight: 1, arbitrary: fc.constant<Mutation>({ m: 'wrongSecret' }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('shift' as const), delta: fc.integer({ min: -1000, max: 1000 }) }) },
  {
    weight: 6,
    arbitrary: fc.record({ m: fc.constant('flipBody' as const), index: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  },
  {
    weight: 6,
    arbitrary: fc.record({ m: fc.constant('flipHeader' as const), which, index: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('nameCase' as const), which, mask: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('repeat' as const), which, copies: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constantFrom('drop' as const, 'empty' as const), which }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('huge' as const), which, size: fc.integer({ min: 257, max: 200_000 }) }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('truncate' as const), keep: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('append' as const), extra: fc.uint8Array({ minLength: 1, maxLength: 16 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      m: fc.constant('notBytes' as const),
      value: fc.oneof(fc.constant(null), fc.constant(undefined), fc.integer(), fc.object(), fc.array(fc.nat())),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      m: fc.constant('garbage' as const),
      headers: fc.dictionary(
        fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 20 })),
        fc.oneof(fc.string({ maxLength: 80 }), fc.stringMatching(/^[0-9a-f]{64}$/), fc.stringMatching(/^[0-9]{1,12}$/)),
        { maxKeys: 6 },
      ),
      body: fc.oneof(fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 200 })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('hugeBody' as const), size: fc.integer({ min: 1, max: 300_000 }) }) },
)

const body = fc.oneof(
  fc.json({ maxDepth: 3 }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.uint8Array({ maxLength: 300 }),
  fc
    .record({ type: fc.constantFrom('email.bounced', 'email.queued', 'organization.updated'), pad: fc.string({ maxLength: 100 }) })
    .map((e) => JSON.stringify({ ...e, data: { id: 'e', __proto__: { polluted: true }, constructor: { prototype: { x: 1 } } } })),
)
const id = fc.oneof(fc.uuid(), fc.stringMatching(/^[!-+\-/-~]{1,40}$/))

const encoder = new TextEncoder()
const sign = (secret: string, i: string, ts: string, b: Uint8Array) =>
  createHmac('sha256', secret).update(`${i}.${ts}.`).update(b).digest('hex')

function flipChar(text: string, index: number, bit: number): string {
  if (text.length === 0) return text
  const at = index % text.length
  return text.slice(0, at) + String.fromCharCode(text.charCodeAt(at) ^ (1 << bit)) + text.slice(at + 1)
}

function recase(name: string, mask: number): string {
  return [...name].map((ch, i) => ((mask >> i) & 1 ? ch.toUpperCase() : ch)).join('')
}

interface Built {
  headers: Headers | Record<string, string | string[]>
  body: unknown
  secret: string | string[]
  accept: boolean
  id: string
  timestamp: number
  sensitive: string[]
}

function build(i: string, bodyValue: string | Uint8Array, mutationValue: Mutation): Built {
  const bytes = typeof bodyValue === 'string' ? encoder.encode(bodyValue) : bodyValue
  let ts = String(NOW_S)
  let signature = sign(SECRET, i, ts, bytes)
  const values = [i, ts, signature]
  const names: string[] = [...NAMES]
  let sentBody: unknown = bodyValue
  let secret: string | string[] = SECRET
  let accept = true
  const sensitive = [SECRET, signature]
  const m = mutationValue
  const record = (): Record<string, string | string[]> => Object.fromEntries(names.map((name, k) => [name, values[k] as string]))
  let headers: Headers | Record<string, string | string[]> | undefined
  switch (m.m) {
    case 'exact':
      break
    case 'upper':
      values[2] = signature.toUpperCase()
      break
    case 'rotation':
      secret = [OTHER, SECRET]
      break
    case 'wrongSecret':
      secret = OTHER
      accept = false
      break
    case 'fetchHeaders':
      headers = new Headers(record() as Record<string, string>)
      break
    case 'shift': {
      ts = String(NOW_S + m.delta)
      signature = sign(SECRET, i, ts, bytes)
      values[1] = ts
      values[2] = signature
      sensitive.push(signature)
      accept = Math.abs(m.delta) <= 300
      break
    }
    case 'flipBody': {
      if (bytes.byteLength === 0) {
        sentBody = new Uint8Array([1 << m.bit])
      } else {
        const copy = bytes.slice()
        const at = m.index % copy.byteLength
        copy[at] = (copy[at] as number) ^ (1 << m.bit)
        sentBody = copy
      }
      accept = false
      break
    }
    case 'flipHeader': {
      const before = values[m.which] as string
      const after = flipChar(before, m.index, m.bit)
      values[m.which] = after
      // Flipping bit 5 of a hex letter only changes its case: the same MAC bytes, accepted by design.
      accept = m.which === 2 && after.toLowerCase() === before.toLowerCase()
      break
    }
    case 'nameCase':
      names[m.which] = recase(names[m.which] as string, m.mask)
      break
    case 'repeat': {
      const name = names[m.which] as string
      const value = values[m.which] as string
      headers = record()
      if (m.copies === 3) {
        // The same header under two spellings of its name.
        headers[name.toUpperCase()] = value
        accept = false
      } else {
        headers[name] = Array.from({ length: m.copies }, () => value)
        accept = m.copies === 1
      }
      break
    }
    case 'drop':
      headers = record()
      delete headers[names[m.which] as string]
      accept = false
      break
    case 'empty':
      values[m.which] = ''
      accept = false
      break
    case 'huge':
      values[m.which] = (m.which === 1 ? '1' : 'a').repeat(m.size)
      accept = false
      break
    case 'hugeBody': {
      const big = new Uint8Array(m.size).fill(0x7b)
      values[2] = sign(SECRET, i, ts, big)
      sensitive.push(values[2])
      sentBody = big
      break
    }
    case 'truncate':
      sentBody = bytes.subarray(0, bytes.byteLength === 0 ? 0 : m.keep % bytes.byteLength)
      accept = bytes.byteLength === 0
      break
    case 'append': {
      const longer = new Uint8Array(bytes.byteLength + m.extra.byteLength)
      longer.set(bytes)
      longer.set(m.extra, bytes.byteLength)
      sentBody = longer
      accept = false
      break
    }
    case 'notBytes':
      sentBody = m.value
      accept = false
      break
    case 'garbage': {
      headers = m.headers
      sentBody = m.body
      // A random 64-hex "signature" over random content verifies with probability 2^-256.
      accept = false
      break
    }
  }
  if (typeof sentBody === 'string' || sentBody instanceof Uint8Array) {
    const text = typeof sentBody === 'string' ? sentBody : Buffer.from(sentBody).toString('latin1')
    if (text.length >= 16) sensitive.push(text.slice(0, 256))
  }
  return { headers: headers ?? record(), body: sentBody, secret, accept, id: i, timestamp: Number(ts), sensitive }
}

describe(`verifyWebhook under ${RUNS.toLocaleString('en-US')} generated hostile cases`, () => {
  it('accepts only an exact valid delivery and refuses everything else with a typed error that leaks nothing', async () => {
    const tally = new Map<string, number>()
    const count = (key: string) => tally.set(key, (tally.get(key) ?? 0) + 1)
    const seed = Number(process.env.RELIABILITY_SEED ?? Date.now() % 2 ** 31)
    const started = performance.now()
    await fc.assert(
      fc.asyncProperty(id, body, mutation, async (i, b, m) => {
        const built = build(i, b, m)
        let outcome: string
        try {
          const verified = await verifyWebhook({
            headers: built.headers as Record<string, string>,
            body: built.body as string,
            secret: built.secret,
            now: () => NOW_MS,
          })
          outcome = 'accepted'
          if (!built.accept) throw new Error(`accepted a ${m.m} case that must be refused`)
          if (verified.id !== built.id || verified.timestamp !== built.timestamp) throw new Error('accepted with the wrong id or timestamp')
        } catch (error) {
          if (!(error instanceof WebhookVerificationError)) throw error
          outcome = error.code
          if (built.accept) throw new Error(`refused a valid ${m.m} case with ${error.code}`)
          const emitted = `${error.message} ${String(error.cause ?? '')} ${JSON.stringify(error)}`
          for (const secret of built.sensitive) if (emitted.includes(secret)) throw new Error(`the ${error.code} message leaks input`)
        }
        count(outcome)
        count(`mutation:${m.m}`)
      }),
      { numRuns: RUNS, seed },
    )
    const seconds = (performance.now() - started) / 1000
    const outcomes = [...tally].filter(([key]) => !key.startsWith('mutation:')).sort((a, b) => b[1] - a[1])
    printTable(
      `verifyWebhook: ${RUNS.toLocaleString('en-US')} generated cases in ${seconds.toFixed(1)} s (RELIABILITY_SEED=${seed})`,
      outcomes.map(([outcome, n]) => ({ outcome, cases: n })),
    )
    const total = outcomes.reduce((sum, [, n]) => sum + n, 0)
    expect(total).toBe(RUNS)
    // Both sides of the property were exercised in volume.
    expect(tally.get('accepted') ?? 0).toBeGreaterThan(RUNS / 20)
    expect(tally.get('signature_mismatch') ?? 0).toBeGreaterThan(RUNS / 20)
    expect(Object.getPrototypeOf({}) === Object.prototype && !('polluted' in {})).toBe(true)
  }, 600_000)
})
