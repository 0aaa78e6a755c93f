/** Claim step: ask the store for the event's key and map duplicate, in-flight and store failure to answers. */
import { WebhookHandlingError } from '../errors.js'
import type { WebhookEvent } from '../events.js'
import type { EventOrder } from '../ordering/status.js'
import type { Claim, CompleteOptions } from '../store/types.js'
import { duplicateAnswer, storeUnavailable } from './answers.js'
import { attempt } from './deadline.js'
import { type EventOrdering, eventOrderOf } from './order.js'
import type { Pipeline } from './pipeline.js'
import type { ReceiverResponse } from './types.js'

/** A claim this request holds, and when it was asked for (the handler deadline counts from then, as the lease may). */
export interface Claimed {
  claim: Claim
  startedAt: number
  /** `ctx.order`, from the claim's answer. */
  order: EventOrder
  /** What `complete` passes to the store (with the event's `order` when its mark advances). */
  completeOptions: CompleteOptions
}

/** Claims `key`; returns the claim, or the answer when there is nothing to run (duplicate, in flight, store down). */
export async function claimKey<Ctx>(
  p: Pipeline<Ctx>,
  key: string,
  event: WebhookEvent | undefined,
  ordering: EventOrdering,
): Promise<Claimed | ReceiverResponse> {
  const startedAt = performance.now()
  const pending = attempt(() => p.store.claim(key, ordering.claimOptions))
  let timedOut = false
  let result: Awaited<typeof pending>
  try {
    result = await p.deadlines.within(pending, p.storeMayHang ? startedAt + p.storeTimeoutMs : undefined, () => {
      timedOut = true
      // A claim that lands after we gave up would block retries until its lease ends: give it back.
      pending.then((late) => (late.status === 'acquired' ? p.store.release(late.claim) : false)).catch(() => {})
      return new Error(`store claim took longer than ${p.storeTimeoutMs} ms`)
    })
  } catch (cause) {
    return p.fail(storeUnavailable(cause, timedOut ? p.storeTimeoutMs : undefined), event, 1000)
  }
  if (result.status === 'acquired') {
    return { claim: result.claim, startedAt, order: eventOrderOf(p, ordering, result), completeOptions: ordering.completeOptions }
  }
  if (result.status === 'duplicate') {
    p.reporter.duplicates++
    return duplicateAnswer(event)
  }
  const error = new WebhookHandlingError(
    'in_flight',
    'This event is being handled by another request right now; retry after the Retry-After delay.',
  )
  return p.fail(error, event, result.retryAfterMs)
}
