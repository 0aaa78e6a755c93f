/**
 * The hand-written baseline: the least a correct webhook receiver must do, written for correctness
 * first, as a user would write it by hand with `node:crypto` and no library. The bench's main HTTP
 * baseline (issue 34): our middleware is measured against this with the same kind of dedup.
 *
 *   1. The signature: HMAC-SHA256, keyed with the secret's UTF-8 bytes (`whsec_…` as given), over
 *      `webhook-id + "." + webhook-timestamp + "."` then the raw body bytes, compared with
 *      `timingSafeEqual` against the 64 hex characters of `webhook-signature` (the scheme of
 *      @email-webhooks/core's verify.ts and of bench/src/payloads.js). Anything else: 401.
 *   2. The window: a timestamp more than 300 s from now, past or future, is refused (401).
 *   3. `JSON.parse` of the body (400 when it is not JSON).
 *   4. Dedup: an event already recorded answers 200 without running the handler; one running in
 *      this process answers 409 (the sender retries); otherwise the handler runs, then the event is
 *      recorded (`dedup.record`, durable before it resolves in the durable stores), then 200. A
 *      handler that throws answers 500 and records nothing, so the sender's retry runs it again.
 *
 * The record is written after the handler: a crash in between runs the handler again on the retry
 * (at least once), never loses an event. Across processes nothing holds an event while its handler
 * runs: two copies arriving at two instances at once can both run it (the multi-instance bench
 * counts how often).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

const TOLERANCE_SECONDS = 300
const JSON_HEADERS = { 'content-type': 'application/json' }
const answer = (status, body) => ({ status, headers: JSON_HEADERS, body })
const OK = answer(200, '{"ok":true}')
const DUPLICATE = answer(200, '{"ok":true,"duplicate":true}')
const UNAUTHORIZED = answer(401, '{"ok":false,"error":"invalid_signature"}')
const STALE = answer(401, '{"ok":false,"error":"timestamp_out_of_window"}')
const NOT_JSON = answer(400, '{"ok":false,"error":"invalid_json"}')
const IN_FLIGHT = { status: 409, headers: { ...JSON_HEADERS, 'retry-after': '1' }, body: '{"ok":false,"error":"in_flight"}' }
const FAILED = answer(500, '{"ok":false,"error":"handler_failed"}')

/**
 * @param {{ secret: string, dedup: { seen(id: string): boolean | Promise<boolean>, record(id: string): void | Promise<void> },
 *   handlers: Record<string, (event: object) => unknown>, now?: () => number }} options
 * @returns {(id: unknown, timestamp: unknown, signature: unknown, body: Buffer) => Promise<{ status: number, headers: object, body: string }>}
 */
export function createHandReceiver({ secret, dedup, handlers, now = Date.now }) {
  const key = Buffer.from(secret, 'utf8')
  const running = new Set()

  return async function receive(id, timestamp, signature, body) {
    if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signature !== 'string') return UNAUTHORIZED
    // The id is part of the signed text: a '.' in it would let one signature read as another id.
    if (id.length === 0 || id.length > 256 || id.includes('.') || signature.length !== 64) return UNAUTHORIZED
    if (!/^\d{1,15}$/.test(timestamp)) return UNAUTHORIZED
    if (Math.abs(Math.floor(now() / 1000) - Number(timestamp)) > TOLERANCE_SECONDS) return STALE
    const given = Buffer.from(signature, 'hex')
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest()
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return UNAUTHORIZED
    let event
    try {
      event = JSON.parse(body.toString('utf8'))
    } catch {
      return NOT_JSON
    }
    if (running.has(id)) return IN_FLIGHT
    running.add(id)
    try {
      if (await dedup.seen(id)) return DUPLICATE
      try {
        await handlers[event?.type]?.(event)
      } catch {
        return FAILED
      }
      await dedup.record(id)
      return OK
    } finally {
      running.delete(id)
    }
  }
}
