/**
 * Verification: `verifyWebhook` vs a hand-written node:crypto HMAC + timingSafeEqual baseline vs
 * standardwebhooks, svix and stripe, each verifying its own format of the same body; plus the
 * cost of refusing a malformed signature and a stale timestamp.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { cryptoBackendName, parseEnvelope, verifyWebhook } from '@email-webhooks/core'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import Stripe from 'stripe'
import { Webhook as SvixWebhook } from 'svix'
import { measureGroup } from './harness.js'
import { BENCH_SECRET, eventBody } from './payloads.js'

export const VERIFY_SIZES = [
  { label: '300 B', bytes: 300 },
  { label: '2 KB', bytes: 2048 },
  { label: '64 KB', bytes: 64 * 1024 },
  { label: '1 MB', bytes: 1024 * 1024 },
]

const ID = '2f7c0a8e-4b1d-4c3e-9f5a-6d8b7e9c0a1b'
// The peers take base64 secrets with a `whsec_` prefix; they all sign the same body bytes.
const PEER_SECRET = `whsec_${Buffer.from(BENCH_SECRET).toString('base64')}`
const stripe = new Stripe('sk_test_bench_only', { telemetry: false })

function handWritten(key) {
  return function verifyByHand(headers, body) {
    const expected = Buffer.from(headers['webhook-signature'], 'hex')
    const mac = createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.`).update(body).digest()
    if (expected.length !== mac.length || !timingSafeEqual(expected, mac)) throw new Error('signature mismatch')
  }
}

/** Builds every case for one body size; each case is checked to accept its input before timing. */
export function verifyCases(size) {
  const body = eventBody(ID, size)
  const timestamp = Math.floor(Date.now() / 1000)
  const text = `${ID}.${timestamp}.`
  const ours = {
    'webhook-id': ID,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': createHmac('sha256', BENCH_SECRET).update(text).update(body).digest('hex'),
  }
  const standard = new StandardWebhook(PEER_SECRET.slice('whsec_'.length))
  const standardHeaders = {
    'webhook-id': ID,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standard.sign(ID, new Date(timestamp * 1000), body.toString()),
  }
  const svix = new SvixWebhook(PEER_SECRET)
  const svixHeaders = {
    'svix-id': ID,
    'svix-timestamp': String(timestamp),
    'svix-signature': svix.sign(ID, new Date(timestamp * 1000), body.toString()),
  }
  const stripeHeader = stripe.webhooks.generateTestHeaderString({ payload: body.toString(), secret: BENCH_SECRET, timestamp })
  const byHand = handWritten(Buffer.from(BENCH_SECRET))
  const malformed = { ...ours, 'webhook-signature': `v1,${ours['webhook-signature']}` }
  const stale = { ...ours, 'webhook-timestamp': String(timestamp - 3600) }

  return {
    verify: [
      { name: 'hand-written', fn: () => byHand(ours, body) },
      { name: 'verifyWebhook', fn: () => verifyWebhook({ headers: ours, body, secret: BENCH_SECRET }) },
      { name: 'standardwebhooks', fn: () => standard.verify(body, standardHeaders) },
      { name: 'svix', fn: () => svix.verify(body, svixHeaders) },
      { name: 'stripe', fn: () => stripe.webhooks.signature.verifyHeader(body, stripeHeader, BENCH_SECRET, 300) },
    ],
    // standardwebhooks, svix and stripe's constructEvent also parse the JSON: compare like with like.
    verifyAndParse: [
      {
        name: 'verifyWebhook + parseEnvelope',
        fn: () => verifyWebhook({ headers: ours, body, secret: BENCH_SECRET }).then((verified) => parseEnvelope(body, verified.id)),
      },
      { name: 'stripe constructEvent', fn: () => stripe.webhooks.constructEvent(body, stripeHeader, BENCH_SECRET, 300) },
    ],
    reject: [
      {
        name: 'verifyWebhook, malformed signature',
        fn: () => verifyWebhook({ headers: malformed, body, secret: BENCH_SECRET }).catch(noop),
      },
      { name: 'verifyWebhook, stale timestamp', fn: () => verifyWebhook({ headers: stale, body, secret: BENCH_SECRET }).catch(noop) },
      { name: 'hand-written, stale timestamp (HMAC first)', fn: () => tryCatch(() => byHand(stale, body)) },
    ],
  }
}

function noop() {}
function tryCatch(fn) {
  try {
    fn()
  } catch {}
}

async function assertAccepted(cases) {
  for (const { name, fn } of cases) {
    try {
      await fn()
    } catch (error) {
      throw new Error(`bench case "${name}" refused its own valid input: ${error.message}`)
    }
  }
}

/** Runs the verification benchmark; returns rows with µs per call and ratios to the hand-written baseline. */
export async function runVerifyBench({ roundMs, rounds, sizes = VERIFY_SIZES }) {
  const rows = []
  for (const size of sizes) {
    const cases = verifyCases(size.bytes)
    await assertAccepted([...cases.verify, ...cases.verifyAndParse])
    // Large bodies run fewer iterations per round; the harness calibrates per case.
    const results = await measureGroup([...cases.verify, ...cases.verifyAndParse], { roundMs, rounds })
    const hand = results.get('hand-written').nsPerOp
    for (const [name, result] of results) rows.push({ size: size.label, name, nsPerOp: result.nsPerOp, vsHand: result.nsPerOp / hand })
  }
  const rejectCases = verifyCases(2048).reject
  const rejectResults = await measureGroup(rejectCases, { roundMs, rounds })
  const reject = [...rejectResults].map(([name, result]) => ({ name, nsPerOp: result.nsPerOp }))
  return { backend: cryptoBackendName(), rows, reject }
}
