/**
 * One attempt of the faithful sender on the wire: the event signed afresh with the endpoint's
 * secret and a new timestamp, POSTed with redirects not followed, abandoned at the receiver
 * timeout (even by an injected `fetch` that ignores its signal), and classified as the contract
 * counts it: a 2xx succeeds; a 3xx, any other status, a timeout or a network failure fails.
 */
import { signWebhook, type WebhookEvent } from '@email-webhooks/core'
import type { SenderAttempt } from './sender-types.js'

/** How attempts are sent: the `fetch`, the receiver timeout, and the set of attempts in flight (to abort on close). */
export interface PostContext {
  send: typeof fetch
  receiverTimeoutMs: number
  inFlight: Set<AbortController>
}

/** The delivery an attempt carries. */
export interface PostTarget {
  url: string
  secret: string
  endpointId: string
  deliveryId: string
  event: WebhookEvent
  body: string
}

/**
 * Sends one attempt and records how it went.
 * @param context The `fetch`, the receiver timeout, the attempts in flight.
 * @param target The endpoint and the delivery's event and body.
 * @param attempt Its number, whether it repeats a delivered one, and the `webhook-timestamp` (s).
 * @throws Never: every failure is in the record.
 * @example
 * const record = await postAttempt(context, target, { attemptNo: 1, repeat: false, timestamp: Math.floor(Date.now() / 1000) })
 */
export async function postAttempt(
  context: PostContext,
  target: PostTarget,
  attempt: { attemptNo: number; repeat: boolean; timestamp: number },
): Promise<SenderAttempt> {
  const { url, secret, body, event } = target
  const signed = await signWebhook({ secret, body, id: event.id, timestamp: attempt.timestamp })
  const record: SenderAttempt = {
    endpointId: target.endpointId,
    deliveryId: target.deliveryId,
    eventId: event.id,
    attempt: attempt.attemptNo,
    timestamp: signed.headers['webhook-timestamp'] as string,
    signature: signed.headers['webhook-signature'] as string,
    status: 0,
    ok: false,
    repeat: attempt.repeat,
  }
  const controller = new AbortController()
  context.inFlight.add(controller)
  const timer = setTimeout(() => controller.abort(), context.receiverTimeoutMs)
  try {
    const sent = context.send(url, { method: 'POST', headers: signed.headers, body, redirect: 'manual', signal: controller.signal })
    // The timeout holds even for an injected fetch that ignores its signal.
    const aborted = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })
    })
    aborted.catch(() => {})
    sent.catch(() => {})
    const response = await Promise.race([sent, aborted])
    await response.body?.cancel().catch(() => {})
    record.status = response.status
    record.ok = response.status >= 200 && response.status < 300
    if (!record.ok) record.failure = response.status >= 300 && response.status < 400 ? 'redirect' : 'status'
  } catch {
    record.failure = controller.signal.aborted ? 'timeout' : 'network'
  } finally {
    clearTimeout(timer)
    context.inFlight.delete(controller)
  }
  return record
}
