/** Payloads shared by the benchmarks: real event JSON padded to an exact size, and the secret. */

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
