/**
 * The receiver pipeline (DESIGN.md), read top to bottom in `receive`:
 * read → verify → parse → claim → dispatch → settle.
 * Adapters give it the raw body and the headers and write back the answer it returns.
 * A 2xx is returned only after the store's `complete` has resolved.
 */
import { WebhookVerificationError } from '../errors.js'
import { parseEnvelope, type WebhookEvent } from '../events.js'
import { createVerifier, type WebhookBody } from '../verify.js'
import { bodyTooLargeError } from './answers.js'
import { type Claimed, claimKey } from './claim.js'
import { dispatchEvent } from './dispatch.js'
import { decideFact, reconcileIndexOf } from './facts.js'
import { PACKAGE, resolveOptions } from './options.js'
import { orderingOf } from './order.js'
import { createPipeline } from './pipeline.js'
import { refuseReconciled, settleAlreadyHandled, settleHandled, settleInvalid, settleRecorded, settleSkipped } from './settle.js'
import type { HandlerContext, ReceiveInput, Receiver, ReceiverOptions, ReceiverResponse } from './types.js'

function exceeds(body: WebhookBody, maxBytes: number): boolean {
  if (typeof body !== 'string') return typeof body === 'object' && body !== null && body.byteLength > maxBytes
  // A UTF-16 unit is at most 3 UTF-8 bytes: only measure exactly when it can matter.
  return body.length * 3 > maxBytes && new TextEncoder().encode(body).byteLength > maxBytes
}

/** The parsed envelope, or the reason a signed body is not one. */
function parse(body: WebhookBody, id: string): WebhookEvent | WebhookVerificationError {
  try {
    return parseEnvelope(body, id)
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error
    throw error
  }
}

/**
 * Builds the pipeline with secrets and options checked once, and the store opened.
 *
 * @param options.secret One endpoint secret or several (rotation).
 * @param options.handlers Handlers keyed by email event type.
 * @param options.store Dedup store; default SQLite on Node (`EMAIL_WEBHOOKS_DB` or `./.email-webhooks/dedup.db`), `'memory'` to opt out of durability.
 * @throws {TypeError} when a secret or an option is invalid.
 * @throws {DedupStoreError} when no store is given and Node's default SQLite file cannot be opened.
 * @example
 * const receiver = createReceiver({ secret, handlers: { 'email.bounced': (e) => markBounced(e.data.id) } })
 * const answer = await receiver.receive({ headers: request.headers, body: await request.arrayBuffer() })
 */
export function createReceiver<Extra = object>(options: ReceiverOptions<HandlerContext & Extra>): Receiver<Extra> {
  if (options === null || typeof options !== 'object') throw new TypeError(`${PACKAGE} createReceiver needs an options object.`)
  const verify = createVerifier(options)
  const p = createPipeline(resolveOptions(options), options.onError)

  async function receive(input: ReceiveInput<Extra>): Promise<ReceiverResponse> {
    const { headers, body } = input
    if (exceeds(body, p.maxBodyBytes)) return p.fail(bodyTooLargeError(p.maxBodyBytes))
    let verified: Awaited<ReturnType<typeof verify>>
    try {
      verified = await verify(headers, body)
    } catch (error) {
      if (error instanceof WebhookVerificationError) return p.fail(error)
      throw error
    }
    p.reporter.verified()
    const parsed = parse(body, verified.id)
    const event = parsed instanceof WebhookVerificationError ? undefined : parsed
    const key = `${p.namespace}:${verified.id}`
    const claimed = await claimKey(p, key, event, orderingOf(p, event))
    if (!('claim' in claimed)) return claimed
    // Handled here already, its complete still pending (the lease ended while the store was down).
    const recorded = p.recorder.size > 0 ? p.recorder.take(key) : undefined
    if (recorded !== undefined) return settleOnce(claimed, () => settleRecorded(p, claimed, recorded))
    if (claimed.settle === undefined) return run(claimed, event, parsed, verified, input.context)
    return settleOnce(claimed, () => run(claimed, event, parsed, verified, input.context))
  }

  /** Runs `step`, then frees what the claim holds in this process, unless a late settle took that over. */
  async function settleOnce(claimed: Claimed, step: () => Promise<ReceiverResponse>): Promise<ReceiverResponse> {
    try {
      return await step()
    } finally {
      // Unless a late settle took it over (a handler past its deadline, a complete tried again), the claim is settled now.
      claimed.settle?.()
    }
  }

  /** Runs the claimed event's handlers (or skips or ignores it) and settles the claim. */
  async function run(
    claimed: Claimed,
    event: WebhookEvent | undefined,
    parsed: WebhookEvent | WebhookVerificationError,
    verified: { id: string; timestamp: number },
    context: Extra | undefined,
  ): Promise<ReceiverResponse> {
    if (event === undefined) return settleInvalid(p, claimed, verified.id, parsed as WebhookVerificationError)
    const index = reconcileIndexOf(event)
    if (index !== undefined || claimed.fact !== undefined) {
      const decision = decideFact(claimed.fact, index)
      if ('refuse' in decision) return refuseReconciled(p, claimed, event, decision.refuse)
      if (decision.change) claimed.completeOptions = { ...claimed.completeOptions, factChange: decision.change }
      if (!decision.run) return settleAlreadyHandled(p, claimed, event)
    }
    const { order } = claimed
    if (order.status === 'stale' && p.skipStale?.(event.type, order.newestHandled.type)) return settleSkipped(p, claimed, event)
    const known = await dispatchEvent(p, event, claimed, verified.timestamp, context, index === undefined ? 'sender' : 'reconcile')
    if (typeof known !== 'boolean') return known
    return settleHandled(p, claimed, event, known)
  }

  return {
    receive,
    store: () => p.store,
    refuse: (error) => p.fail(error),
    stats: () => p.reporter.stats(),
    maxBodyBytes: p.maxBodyBytes,
  }
}

export { bodyTooLargeError } from './answers.js'
export { type EventSource, RECONCILE_FIELD } from './facts.js'
export {
  DEFAULT_HANDLER_TIMEOUT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_NAMESPACE,
  DEFAULT_RETENTION_MS,
  DEFAULT_STORE_TIMEOUT_MS,
} from './options.js'
export type * from './types.js'
