/**
 * The node:crypto and Web Crypto backends agree on one table of vectors: the raw primitives
 * (imported from the built files), and the full verifyWebhook on each path (the web path in a
 * child started with `--conditions=workerd`). The children also count HMAC computations, to
 * prove that cheap shape and window checks come before any HMAC.
 */
import { execFileSync } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { dirname, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { cryptoBackendName, signWebhook, verifyWebhook } from '@email-webhooks/core'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { beforeAll, describe, expect, it } from 'vitest'
import { bodyBytes, decodeBody, IDS, VECTORS, type Vector, type WireBody } from './vectors.js'

const here = dirname(fileURLToPath(import.meta.url))
const TEST_DIR = resolve(here, '..')
const CORE_DIST = resolve(here, '../../packages/core/dist')
const CHILD = resolve(here, 'web-path.child.mjs')

/** The shape of `backend` exported by dist/crypto-node.js and dist/crypto-web.js (src/crypto/backend.ts). */
interface CryptoBackend {
  readonly name: 'node' | 'web'
  importKey(secret: Uint8Array): unknown
  verify(key: unknown, prefix: string, body: Uint8Array | string, mac: Uint8Array): boolean | Promise<boolean>
  signHex(key: unknown, prefix: string, body: Uint8Array | string): string | Promise<string>
}

interface VerifyCase {
  name: string
  headers: Record<string, string>
  body: WireBody
  secret: string | string[]
  nowMs: number
}

type Outcome = { ok: { id: string; timestamp: number } } | { error: string; code?: string; status?: number }

interface ChildResult {
  backend: 'node' | 'web'
  signatures: { name: string; signature: string; hmacCalls: number }[]
  verified: { name: string; result: Outcome; hmacCalls: number }[]
  concurrent: Outcome[]
}

/** HMAC-SHA256 over id.timestamp.body computed here, independently of both backends. */
function reference(v: Vector): string {
  return createHmac('sha256', v.secret).update(`${v.id}.${v.timestamp}.`).update(bodyBytes(v.body)).digest('hex')
}

const NOW_S = 1_767_225_600
const OTHER_SECRET = 'whsec_some_other_endpoint'

function flipLastHex(signature: string): string {
  return signature.slice(0, -1) + (signature.endsWith('0') ? '1' : '0')
}

/** Builds the verify cases: each vector valid, with a wrong MAC and with a wrong secret; then the cost cases. */
async function buildCases(): Promise<{ cases: VerifyCase[]; hmacBudget: Map<string, number> }> {
  const cases: VerifyCase[] = []
  for (const v of VECTORS) {
    const { headers } = await signWebhook({ secret: v.secret, id: v.id, timestamp: v.timestamp, body: bodyBytes(v.body) })
    const nowMs = v.timestamp * 1000
    cases.push({ name: `${v.name}: valid`, headers, body: v.body, secret: v.secret, nowMs })
    const wrongMac = { ...headers, 'webhook-signature': flipLastHex(headers['webhook-signature']!) }
    cases.push({ name: `${v.name}: wrong MAC`, headers: wrongMac, body: v.body, secret: v.secret, nowMs })
    cases.push({ name: `${v.name}: wrong secret`, headers, body: v.body, secret: OTHER_SECRET, nowMs })
  }

  const body: WireBody = { kind: 'string', text: '{"id":"019b7a00-0000-7000-8000-000000000001","type":"email.queued"}' }
  const id = IDS[0]!
  const nowMs = NOW_S * 1000
  const sign = async (timestamp = NOW_S, secret = TEST_SECRET) =>
    (await signWebhook({ secret, id, timestamp, body: decodeBody(body) as string })).headers
  const good = await sign()
  const sig = good['webhook-signature']!
  const { 'webhook-id': _, ...withoutId } = good
  const budget: [string, Record<string, string>, number, (string | string[])?][] = [
    ['cost: valid', good, 1],
    ['cost: wrong secret', good, 1, OTHER_SECRET],
    ['cost: rotation, matching first secret', good, 1, [TEST_SECRET, OTHER_SECRET]],
    ['cost: rotation, matching second secret', good, 2, [OTHER_SECRET, TEST_SECRET]],
    ['cost: signature of 63 characters', { ...good, 'webhook-signature': sig.slice(1) }, 0],
    ['cost: signature of 65 characters', { ...good, 'webhook-signature': `${sig}0` }, 0],
    ['cost: non-hex signature', { ...good, 'webhook-signature': `z${sig.slice(1)}` }, 0],
    ['cost: v1,-prefixed signature', { ...good, 'webhook-signature': `v1,${sig}` }, 0],
    ['cost: malformed timestamp 123abc', { ...good, 'webhook-timestamp': '123abc' }, 0],
    ['cost: malformed timestamp 1e9', { ...good, 'webhook-timestamp': '1e9' }, 0],
    ['cost: stale timestamp (301 s old, correctly signed)', await sign(NOW_S - 301), 0],
    ['cost: future timestamp (301 s ahead, correctly signed)', await sign(NOW_S + 301), 0],
    ['cost: malformed id', { ...good, 'webhook-id': `${id}.x` }, 0],
    ['cost: missing webhook-id', withoutId, 0],
  ]
  const hmacBudget = new Map<string, number>()
  for (const [name, headers, calls, secret] of budget) {
    cases.push({ name, headers, body, secret: secret ?? TEST_SECRET, nowMs })
    hmacBudget.set(name, calls)
  }
  return { cases, hmacBudget }
}

async function outcome(promise: Promise<{ id: string; timestamp: number }>): Promise<Outcome> {
  try {
    return { ok: await promise }
  } catch (error) {
    const e = error as { name?: string; code?: string; status?: number }
    return JSON.parse(JSON.stringify({ error: e.name, code: e.code, status: e.status })) as Outcome
  }
}

function runChild(conditions: string[], job: unknown): ChildResult {
  const stdout = execFileSync(process.execPath, [...conditions, CHILD], {
    cwd: TEST_DIR,
    input: JSON.stringify(job),
    encoding: 'utf8',
    timeout: 30_000,
  })
  return JSON.parse(stdout) as ChildResult
}

describe('node:crypto and Web Crypto primitives agree', () => {
  let nodeBackend: CryptoBackend
  let webBackend: CryptoBackend

  beforeAll(async () => {
    nodeBackend = ((await import(pathToFileURL(resolve(CORE_DIST, 'crypto-node.js')).href)) as { backend: CryptoBackend }).backend
    webBackend = ((await import(pathToFileURL(resolve(CORE_DIST, 'crypto-web.js')).href)) as { backend: CryptoBackend }).backend
  })

  it('loads one backend of each kind from the built files', () => {
    expect([nodeBackend.name, webBackend.name]).toEqual(['node', 'web'])
  })

  for (const v of VECTORS) {
    it(`signs ${v.name} to the same lowercase hex as an independent HMAC, on both backends`, async () => {
      const secret = new TextEncoder().encode(v.secret)
      const prefix = `${v.id}.${v.timestamp}.`
      const body = decodeBody(v.body)
      const expected = reference(v)
      expect(expected).toMatch(/^[0-9a-f]{64}$/)
      for (const backend of [nodeBackend, webBackend]) {
        expect(await backend.signHex(backend.importKey(secret), prefix, body), backend.name).toBe(expected)
      }
    })

    it(`verifies ${v.name} identically on both backends: true for the MAC, false for a changed, short or foreign MAC`, async () => {
      const secret = new TextEncoder().encode(v.secret)
      const prefix = `${v.id}.${v.timestamp}.`
      const body = decodeBody(v.body)
      const mac = Uint8Array.from(Buffer.from(reference(v), 'hex'))
      const flipped = mac.slice()
      flipped[31] = flipped[31]! ^ 0x01
      const macs = [mac, flipped, mac.subarray(0, 31), new Uint8Array(32)]
      const results: Record<string, boolean[]> = {}
      for (const backend of [nodeBackend, webBackend]) {
        const key = backend.importKey(secret)
        results[backend.name] = await Promise.all(macs.map(async (m) => await backend.verify(key, prefix, body, m)))
      }
      expect(results).toEqual({ node: [true, false, false, false], web: [true, false, false, false] })
    })
  }
})

describe('verifyWebhook on the node path and on the web path (--conditions=workerd)', () => {
  let cases: VerifyCase[]
  let hmacBudget: Map<string, number>
  let local: Outcome[]
  let web: ChildResult
  let node: ChildResult

  beforeAll(async () => {
    ;({ cases, hmacBudget } = await buildCases())
    local = []
    for (const c of cases) {
      local.push(await outcome(verifyWebhook({ headers: c.headers, body: decodeBody(c.body), secret: c.secret, now: () => c.nowMs })))
    }
    const job = { sign: VECTORS, verify: cases }
    web = runChild(['--conditions=workerd'], job)
    node = runChild([], job)
  })

  it('loads the node:crypto backend in-process and the Web Crypto backend under the workerd condition', () => {
    expect(cryptoBackendName()).toBe('node')
    expect(node.backend).toBe('node')
    expect(web.backend).toBe('web')
  })

  it('produces the same signWebhook signature on the web path as the independent reference, for every vector', () => {
    expect(web.signatures.map((s) => [s.name, s.signature])).toEqual(VECTORS.map((v) => [v.name, reference(v)]))
    expect(node.signatures.map((s) => s.signature)).toEqual(VECTORS.map(reference))
  })

  it('gives every verify case the same outcome on the web path as in-process on the node path', () => {
    expect(web.verified.map((r) => [r.name, r.result])).toEqual(cases.map((c, i) => [c.name, local[i]]))
    expect(node.verified.map((r) => r.result)).toEqual(local)
  })

  it('gives every case the same outcome when all are verified at once as one after another, on both paths', () => {
    expect(cases.length).toBeGreaterThan(20)
    expect(web.concurrent).toEqual(local)
    expect(node.concurrent).toEqual(local)
  })

  it('accepts every valid vector and refuses its wrong MAC and wrong secret with signature_mismatch', () => {
    const byName = new Map(web.verified.map((r) => [r.name, r.result]))
    for (const v of VECTORS) {
      expect(byName.get(`${v.name}: valid`), v.name).toEqual({ ok: { id: v.id, timestamp: v.timestamp } })
      for (const suffix of ['wrong MAC', 'wrong secret']) {
        expect(byName.get(`${v.name}: ${suffix}`), `${v.name}: ${suffix}`).toEqual({
          error: 'WebhookVerificationError',
          code: 'signature_mismatch',
          status: 401,
        })
      }
    }
  })

  for (const path of ['web', 'node'] as const) {
    it(`runs the cheap shape and window checks before any HMAC on the ${path} path: malformed and out-of-window deliveries cost zero HMACs, a valid one costs one`, () => {
      const result = path === 'web' ? web : node
      const costs = result.verified.filter((r) => hmacBudget.has(r.name)).map((r) => [r.name, r.hmacCalls])
      expect(costs).toEqual([...hmacBudget.entries()])
      const refused = result.verified.filter((r) => hmacBudget.get(r.name) === 0).map((r) => 'code' in r.result && r.result.code)
      expect(new Set(refused)).toEqual(
        new Set(['malformed_signature', 'malformed_timestamp', 'timestamp_too_old', 'timestamp_too_new', 'malformed_id', 'missing_header']),
      )
    })
  }

  it('costs one HMAC per signWebhook call on both paths', () => {
    expect(web.signatures.every((s) => s.hmacCalls === 1)).toBe(true)
    expect(node.signatures.every((s) => s.hmacCalls === 1)).toBe(true)
  })
})
