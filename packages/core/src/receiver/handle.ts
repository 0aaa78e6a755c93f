/**
 * From the claim to the answer, for a request and for the inbox worker alike: the claimed event's
 * facts (reconcile), `skipStale`, the handlers and the settle; a retry of an event whose complete is
 * pending here is recorded without running it again; what the claim holds in this process (its
 * email) is freed once the claim is settled, unless a late settle took that over.
 */
import type { WebhookVerificationError } from '../errors.js'
import type { WebhookEvent } from '../events.js'
import type { Claimed } from './claim.js'
import { dispatchEvent } from './dispatch.js'
import { decideFact, reconcileIndexOf } from './facts.js'
import type { Pipeline } from './pipeline.js'
import { refuseReconciled, settleAlreadyHandled, settleHandled, settleInvalid, settleRecorded, settleSkipped } from './settle.js'
import type { HandlerContext, ReceiverResponse } from './types.js'

/** What was verified of the delivery: its id and `webhook-timestamp`. */
export interface Verified {
  id: string
  timestamp: number
}

/**
 * Handles a claimed event (or a signed body that is not an envelope: `parsed` is then the error)
 * and settles its claim; the answer.
 */
export function handleClaimed<Extra>(
  p: Pipeline<HandlerContext & Extra>,
  key: string,
  claimed: Claimed,
  parsed: WebhookEvent | WebhookVerificationError,
  verified: Verified,
  context: Extra | undefined,
): Promise<ReceiverResponse> {
  // Handled here already, its complete still pending (the lease ended while the store was down).
  const recorded = p.recorder.size > 0 ? p.recorder.take(key) : undefined
  if (recorded !== undefined) return settleOnce(claimed, () => settleRecorded(p, claimed, recorded))
  if (claimed.settle === undefined) return run(p, claimed, parsed, verified, context)
  return settleOnce(claimed, () => run(p, claimed, parsed, verified, context))
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
async function run<Extra>(
  p: Pipeline<HandlerContext & Extra>,
  claimed: Claimed,
  parsed: WebhookEvent | WebhookVerificationError,
  verified: Verified,
  context: Extra | undefined,
): Promise<ReceiverResponse> {
  if (parsed instanceof Error) return settleInvalid(p, claimed, verified.id, parsed)
  const event = parsed
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
  // `return await`: returning the promise itself would cost two more microtask jobs.
  return await settleHandled(p, claimed, event, known)
}
