/**
 * The 16 HMAC vectors (test/core/vectors.ts) as seen by the runtime this runs in: each signed
 * with the public API, then verified as given and with its last hex digit changed. Used by
 * run-neutral.ts (Bun, Deno) and workerd/vectors-worker.ts; `expectedVectorResults` is the
 * same on the Node path, for the tests to compare.
 */
import { signWebhook, verifyWebhook } from '@email-webhooks/core'
import { decodeBody, VECTORS } from '../../core/vectors.ts'

export interface VectorResult {
  name: string
  signature: string
  valid: Outcome
  flipped: Outcome
}

export type Outcome = { ok: { id: string; timestamp: number } } | { code: string | undefined }

async function outcome(promise: Promise<{ id: string; timestamp: number }>): Promise<Outcome> {
  try {
    return { ok: await promise }
  } catch (error) {
    return { code: (error as { code?: string }).code }
  }
}

/** Signs every vector with the public API, and verifies it as given and with its last hex digit changed. */
export async function vectorResults(): Promise<VectorResult[]> {
  const out: VectorResult[] = []
  for (const v of VECTORS) {
    const body = decodeBody(v.body)
    const { headers } = await signWebhook({ secret: v.secret, id: v.id, timestamp: v.timestamp, body })
    const signature = headers['webhook-signature'] as string
    const now = () => v.timestamp * 1000
    const flipped = { ...headers, 'webhook-signature': signature.slice(0, -1) + (signature.endsWith('0') ? '1' : '0') }
    out.push({
      name: v.name,
      signature,
      valid: await outcome(verifyWebhook({ headers, body, secret: v.secret, now })),
      flipped: await outcome(verifyWebhook({ headers: flipped, body, secret: v.secret, now })),
    })
  }
  return out
}

/** What every runtime must report: the signature the Node path computes, the vector accepted, the changed MAC refused. */
export async function expectedVectorResults(): Promise<VectorResult[]> {
  const expected: VectorResult[] = []
  for (const v of VECTORS) {
    const { headers } = await signWebhook({ secret: v.secret, id: v.id, timestamp: v.timestamp, body: decodeBody(v.body) })
    expected.push({
      name: v.name,
      signature: headers['webhook-signature'] as string,
      valid: { ok: { id: v.id, timestamp: v.timestamp } },
      flipped: { code: 'signature_mismatch' },
    })
  }
  return expected
}
