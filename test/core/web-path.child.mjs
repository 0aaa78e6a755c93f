/**
 * Child process of crypto-backends.test.ts. Run it as `node [--conditions=workerd] web-path.child.mjs`
 * with a JSON job on stdin; it prints one JSON result on stdout.
 *
 * It counts every HMAC computation of both backends (node:crypto `createHmac`, Web Crypto
 * `subtle.sign` / `subtle.verify`) before loading the library, then signs the `sign` vectors
 * and verifies the `verify` cases with the public API, recording the outcome and the HMAC
 * count of each call; then verifies all the cases again at once.
 */
import { readFileSync } from 'node:fs'
import { createRequire, syncBuiltinESMExports } from 'node:module'

const counts = { createHmac: 0, subtleSign: 0, subtleVerify: 0 }

const nodeCrypto = createRequire(import.meta.url)('node:crypto')
const createHmac = nodeCrypto.createHmac
nodeCrypto.createHmac = function countedCreateHmac(...args) {
  counts.createHmac++
  return createHmac.apply(this, args)
}
syncBuiltinESMExports()

const subtle = Object.getPrototypeOf(globalThis.crypto.subtle)
for (const [method, counter] of [
  ['sign', 'subtleSign'],
  ['verify', 'subtleVerify'],
]) {
  const original = subtle[method]
  subtle[method] = function countedSubtle(...args) {
    counts[counter]++
    return original.apply(this, args)
  }
}

const { cryptoBackendName, signWebhook, verifyWebhook } = await import('@email-webhooks/core')

const hmacCount = () => counts.createHmac + counts.subtleSign + counts.subtleVerify
const reset = () => {
  counts.createHmac = 0
  counts.subtleSign = 0
  counts.subtleVerify = 0
}

/** Bodies travel as JSON: `{ kind: 'string', text }`, `{ kind: 'bytes', hex }` or `{ kind: 'view', hex, pad }`. */
function decodeBody(body) {
  if (body.kind === 'string') return body.text
  const bytes = Uint8Array.from(Buffer.from(body.hex, 'hex'))
  if (body.kind === 'bytes') return bytes
  const backing = new Uint8Array(bytes.byteLength + 2 * body.pad).fill(0x5a)
  backing.set(bytes, body.pad)
  return backing.subarray(body.pad, body.pad + bytes.byteLength)
}

async function outcome(promise) {
  try {
    return { ok: await promise }
  } catch (error) {
    return { error: error?.name ?? typeof error, code: error?.code, status: error?.status }
  }
}

const job = JSON.parse(readFileSync(0, 'utf8'))

const signatures = []
for (const v of job.sign) {
  reset()
  const signed = await signWebhook({ secret: v.secret, id: v.id, timestamp: v.timestamp, body: decodeBody(v.body) })
  signatures.push({ name: v.name, signature: signed.headers['webhook-signature'], hmacCalls: hmacCount() })
}

const verified = []
for (const c of job.verify) {
  reset()
  const result = await outcome(verifyWebhook({ headers: c.headers, body: decodeBody(c.body), secret: c.secret, now: () => c.nowMs }))
  verified.push({ name: c.name, result, hmacCalls: hmacCount() })
}

// The same cases again, all in flight at once: each call must compare against its own MAC
// (Web Crypto answers later, while the others decode theirs).
const concurrent = await Promise.all(
  job.verify.map((c) => outcome(verifyWebhook({ headers: c.headers, body: decodeBody(c.body), secret: c.secret, now: () => c.nowMs }))),
)

process.stdout.write(JSON.stringify({ backend: cryptoBackendName(), signatures, verified, concurrent }))
