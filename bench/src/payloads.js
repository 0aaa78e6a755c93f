/** Signed request payloads shared by the benchmarks: real event JSON padded to an exact size. */
import { randomUUID } from 'node:crypto'
import { signWebhook } from '@email-webhooks/core'

export const BENCH_SECRET = 'whsec_bench_secret_only_for_benchmarks'

/** A JSON event envelope of exactly `size` bytes (UTF-8), with `id` as its event id. */
export function eventBody(id, size, type = 'email.recipient_accepted') {
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

/** Headers and body of one signed delivery, timestamped now. */
export async function signedDelivery({ id = randomUUID(), size = 1024, type, timestamp = Math.floor(Date.now() / 1000) } = {}) {
  const body = eventBody(id, size, type)
  const { headers } = await signWebhook({ id, timestamp, body, secret: BENCH_SECRET })
  return { id, body, headers }
}
