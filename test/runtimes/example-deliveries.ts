/**
 * The deliveries every runtime example is tested with, sent over HTTP to a running server:
 * a valid bounce, its redelivery (fresh timestamp and signature), a tampered body, a stale
 * timestamp and an unknown type, and the answers expected for each.
 */
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'

export interface ExampleAnswer {
  name: string
  status: number
  body: unknown
}

export const EXPECTED_ANSWERS: ExampleAnswer[] = [
  { name: 'valid', status: 200, body: { ok: true } },
  { name: 'duplicate', status: 200, body: { ok: true, duplicate: true } },
  { name: 'tampered', status: 401, body: { error: { code: 'signature_mismatch' } } },
  { name: 'stale', status: 401, body: { error: { code: 'timestamp_too_old' } } },
  { name: 'unknown type', status: 200, body: { ok: true } },
]

/** Sends the five deliveries to `url` in order; returns each answer (error messages left out) and the bounced email's id. */
export async function sendExampleDeliveries(
  url: string,
  secret: string = TEST_SECRET,
): Promise<{ answers: ExampleAnswer[]; emailId: string }> {
  const valid = await createSignedDelivery({ type: 'email.bounced', secret })
  const duplicate = await createSignedDelivery({ event: valid.event, secret })
  const other = await createSignedDelivery({ type: 'email.bounced', secret })
  const tampered = { ...other, body: other.body.replace('email.bounced', 'email.queued') }
  const stale = await createSignedDelivery({ type: 'email.bounced', secret, timestamp: Math.floor(Date.now() / 1000) - 301 })
  const unknown = await createSignedDelivery({ type: 'organization.updated', secret })
  const answers: ExampleAnswer[] = []
  for (const [name, delivery] of [
    ['valid', valid],
    ['duplicate', duplicate],
    ['tampered', tampered],
    ['stale', stale],
    ['unknown type', unknown],
  ] as const) {
    const res = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body, signal: AbortSignal.timeout(10_000) })
    const json = (await res.json()) as { ok?: boolean; duplicate?: boolean; error?: { code: string } }
    answers.push({ name, status: res.status, body: json.error ? { error: { code: json.error.code } } : json })
  }
  return { answers, emailId: valid.event.data.id as string }
}
