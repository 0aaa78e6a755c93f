/** Settle step: record the event as done (durable before the store resolves), then the final answer. */
import { WebhookHandlingError, type WebhookVerificationError } from '../errors.js'
import type { WebhookEvent } from '../events.js'
import type { CompleteOptions } from '../store/types.js'
import { duplicateAnswer, ignoredAnswer, notRecorded, okAnswer, staleSkippedAnswer } from './answers.js'
import { type Claimed, holdEmailUntilLeaseEnd } from './claim.js'
import { attempt } from './deadline.js'
import type { Pipeline } from './pipeline.js'
import { recordedByThisClaim } from './recorder.js'
import type { ReceiverResponse } from './types.js'

/** What a complete came to: recorded, not this claim's any more, or failed (its complete is then the background recorder's). */
type Recording = true | false | { cause: unknown; timedOut: boolean }

/**
 * Completes the claim within `storeTimeoutMs`: true once the record is durable (or this claim
 * recorded it and the answer was lost), false when the token no longer owns the key. A complete
 * that fails or runs past its deadline is tried again in the background (recorder.ts), never
 * released: the event's work is done, so its retries must not run it again. The recorder then
 * owns what the claim holds in this process, and its email is held at most until the lease ends.
 */
async function record<Ctx>(p: Pipeline<Ctx>, claimed: Claimed, event: WebhookEvent | undefined): Promise<Recording> {
  let timedOut = false
  const completing = attempt(() => p.store.complete(claimed.claim, claimed.completeOptions))
  const pending = claimed.trace === undefined ? completing : claimed.trace.store('complete', completing)
  let completed: boolean
  try {
    completed = await p.deadlines.within(pending, p.storeMayHang ? performance.now() + p.storeTimeoutMs : undefined, () => {
      timedOut = true
      return new Error(`store complete took longer than ${p.storeTimeoutMs} ms`)
    })
  } catch (cause) {
    return handOver(p, claimed, event, pending, { cause, timedOut })
  }
  if (completed) return true
  // A false from a resend of a complete that had landed (its answer lost): recorded by this claim.
  const mine = await recordedByThisClaim(p, claimed.claim, claimed.startedAt, claimed.completeOptions.retentionMs)
  if (mine !== undefined) return mine
  // The store answered the complete, then not the question: not known yet, so not a refusal.
  return handOver(p, claimed, event, Promise.resolve(false), {
    cause: new Error('the store answered the complete false, then did not answer whether this claim had recorded the event'),
    timedOut: false,
  })
}

/** The background recorder takes the complete over (and what the claim holds in this process; its email at most until the lease ends). */
function handOver<Ctx>(
  p: Pipeline<Ctx>,
  claimed: Claimed,
  event: WebhookEvent | undefined,
  first: Promise<boolean>,
  failure: { cause: unknown; timedOut: boolean },
): Recording {
  const { settle } = claimed
  claimed.settle = undefined
  holdEmailUntilLeaseEnd(p, claimed)
  p.recorder.start(claimed.claim, claimed.completeOptions, event, first, settle, claimed.startedAt)
  return failure
}

/** Completes the claim; the failure answer, or undefined once the record is durable. */
async function complete<Ctx>(p: Pipeline<Ctx>, claimed: Claimed, event: WebhookEvent | undefined): Promise<ReceiverResponse | undefined> {
  const recorded = await record(p, claimed, event)
  if (recorded === true) return undefined
  if (recorded !== false) return p.fail(notRecorded(recorded.cause, recorded.timedOut ? p.storeTimeoutMs : undefined), event, 1000)
  const error = new WebhookHandlingError(
    'lease_lost',
    `The handler${event ? ` for ${event.type}` : ''} finished after its lease (${p.leaseMs} ms) ended and another request took the event over; keep handlers well under leaseMs.`,
  )
  return p.fail(error, event, 1000)
}

/**
 * The complete of a handler that finished after its deadline (its request was answered 503): the
 * same path as any complete (the store deadline, then the background recorder), a failure logged.
 * Frees what the claim holds in this process once settled, unless the recorder took that over.
 */
export async function completeLate<Ctx>(p: Pipeline<Ctx>, claimed: Claimed, event: WebhookEvent): Promise<void> {
  const recorded = await record(p, claimed, event)
  if (recorded !== true) {
    p.reporter.storeStepFailed(
      'complete',
      { status: 503, eventId: event.id, type: event.type },
      recorded === false ? false : recorded.cause,
    )
  }
  claimed.settle?.()
  claimed.settle = undefined
}

/** 200 once the handled event is recorded as done. */
export async function settleHandled<Ctx>(
  p: Pipeline<Ctx>,
  claimed: Claimed,
  event: WebhookEvent,
  known: boolean,
): Promise<ReceiverResponse> {
  const failed = await complete(p, claimed, event)
  if (failed) return failed
  // A handler ran (onEvent, the type's handler, or onUnknown), or the event was only acknowledged.
  if (p.onEvent !== undefined || (known ? p.handlers[event.type] !== undefined : p.onUnknown !== undefined)) p.reporter.handled++
  else p.reporter.acknowledged++
  return okAnswer(event, known ? 'handled' : 'unknown_type')
}

/**
 * 200 to a signed, in-window body that is not a valid envelope, once recorded: a 400 would make
 * the sender resend the same bytes until it disables the endpoint. Reported (onError or a log line).
 */
export async function settleInvalid<Ctx>(
  p: Pipeline<Ctx>,
  claimed: Claimed,
  id: string,
  error: WebhookVerificationError,
): Promise<ReceiverResponse> {
  const failed = await complete(p, claimed, undefined)
  if (failed) return failed
  p.reporter.report(error, { status: 200, eventId: id })
  return ignoredAnswer()
}

/**
 * 200 to a stale event that `skipStale` covers, once it is recorded as done (no handler ran);
 * then `onStale` sees it. Counted as skipped.
 */
export async function settleSkipped<Ctx>(p: Pipeline<Ctx>, claimed: Claimed, event: WebhookEvent): Promise<ReceiverResponse> {
  const failed = await complete(p, claimed, event)
  if (failed) return failed
  p.reporter.skipped++
  const order = claimed.order
  if (p.onStale && order.status === 'stale') {
    try {
      // An observer: a rejected promise it returns must not surface as an unhandled rejection.
      Promise.resolve(p.onStale(event, order as typeof order & { status: 'stale' })).catch(() => {})
    } catch {
      // What onStale throws does not change the answer.
    }
  }
  return staleSkippedAnswer(event)
}

/**
 * A retry acquired an event here whose handler already succeeded while its complete was still
 * being tried in the background (the lease ended while the store was down): record it with this
 * claim, without running the handler again, and answer as for a duplicate.
 */
export async function settleRecorded<Ctx>(
  p: Pipeline<Ctx>,
  claimed: Claimed,
  recorded: { options: CompleteOptions; event: WebhookEvent | undefined },
): Promise<ReceiverResponse> {
  claimed.completeOptions = recorded.options
  const failed = await complete(p, claimed, recorded.event)
  if (failed) return failed
  p.reporter.duplicates++
  return duplicateAnswer(recorded.event)
}

/** 200 as a duplicate to an event the other path (reconcile, or the sender) already handled: recorded, no handler run. */
export async function settleAlreadyHandled<Ctx>(p: Pipeline<Ctx>, claimed: Claimed, event: WebhookEvent): Promise<ReceiverResponse> {
  const failed = await complete(p, claimed, event)
  if (failed) return failed
  p.reporter.duplicates++
  return duplicateAnswer(event)
}

/** 409 `reconcile_unsupported` to a reconciled event this receiver cannot recognise, once its claim is given back. */
export async function refuseReconciled<Ctx>(
  p: Pipeline<Ctx>,
  claimed: Claimed,
  event: WebhookEvent,
  why: string,
): Promise<ReceiverResponse> {
  await attempt(() => p.store.release(claimed.claim)).catch((error: unknown) =>
    p.reporter.storeStepFailed('release', { status: 409, eventId: event.id, type: event.type }, error),
  )
  const error = new WebhookHandlingError(
    'reconcile_unsupported',
    `This ${event.type} event came from reconcile, and ${why}, so the receiver cannot tell whether the sender's own delivery of it was already handled. Nothing ran.`,
  )
  return p.fail(error, event)
}
