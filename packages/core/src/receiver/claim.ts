/**
 * Claim step: ask the store for the event's key and map duplicate, in-flight and store failure to
 * answers. With ordering on, one event of an email at a time: the request first takes the
 * email's place in this process (order-gate.ts), then claims; a claim that another instance's
 * event of the same email holds (`in_flight`, reason `order`) is asked again after short pauses.
 * Either wait ends by half of `handlerTimeoutMs` from the request's first claim, with a 409
 * `in_flight` and a short Retry-After.
 */
import { WebhookHandlingError } from '../errors.js'
import type { WebhookEvent } from '../events.js'
import type { EventOrder } from '../ordering/status.js'
import type { Claim, CompleteOptions, FactCounts } from '../store/types.js'
import type { DeliveryTrace } from '../telemetry/trace.js'
import { unref } from '../timers.js'
import { duplicateAnswer, storeUnavailable } from './answers.js'
import { attempt } from './deadline.js'
import { type EventOrdering, eventOrderOf } from './order.js'
import type { Pipeline } from './pipeline.js'
import type { ReceiverResponse } from './types.js'

/** A claim this request holds, and when it was first asked for (the handler deadline counts from then, as the lease may). */
export interface Claimed {
  claim: Claim
  startedAt: number
  /** `ctx.order`, from the claim's answer. */
  order: EventOrder
  /** What `complete` passes to the store (with the event's `order` when its mark advances, and its fact's change). */
  completeOptions: CompleteOptions
  /** The counts of the event's fact, from a store that keeps facts (ordering on, email events). */
  fact: FactCounts | undefined
  /**
   * Frees this process's hold on the event's order key (ordering on), once the claim is settled:
   * completed or released. Whoever settles the claim after the answer (a handler past its
   * deadline) takes it and calls it then; undefined when there is nothing to free.
   */
  settle: (() => void) | undefined
  /**
   * Ordering on: frees this process's hold on the event's email (once; later calls do nothing).
   * Part of `settle`; called on its own at the end of the claim's lease by a settle that outlives
   * the answer (`holdEmailUntilLeaseEnd`): the store's order lock lapses with the lease, so this
   * process must not hold the email longer.
   */
  freeEmail: (() => void) | undefined
  /** The delivery's (or inbox entry's) trace, when telemetry is on. */
  trace: DeliveryTrace | undefined
}

/** The store's answer that another event with the same order key holds it. */
interface OrderBusy {
  busyMs: number
}

/** Pauses between the claims of an event whose email another instance holds: 10 ms, doubling up to 200 ms. */
const FIRST_PAUSE_MS = 10
const MAX_PAUSE_MS = 200

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Claims `key`; returns the claim, or the answer when there is nothing to run (duplicate, in flight, store down). */
export function claimKey<Ctx>(
  p: Pipeline<Ctx>,
  key: string,
  event: WebhookEvent | undefined,
  ordering: EventOrdering,
  trace?: DeliveryTrace,
): Promise<Claimed | ReceiverResponse> {
  const startedAt = performance.now()
  // A retry of an event whose complete is pending here: the next background try starts now.
  if (p.recorder.size > 0) p.recorder.nudge(key)
  const orderKey = ordering.claimOptions.order?.key
  // No order key: one claim, no wait for an email (one async step less per request).
  if (orderKey === undefined) return ask(p, key, event, ordering, startedAt, trace, false) as Promise<Claimed | ReceiverResponse>
  return claimOrdered(p, key, event, ordering, startedAt, trace, orderKey)
}

/** Claims `key` holding the email's place in this process, asking again while another instance holds the email. */
async function claimOrdered<Ctx>(
  p: Pipeline<Ctx>,
  key: string,
  event: WebhookEvent | undefined,
  ordering: EventOrdering,
  startedAt: number,
  trace: DeliveryTrace | undefined,
  orderKey: string,
): Promise<Claimed | ReceiverResponse> {
  const entered = p.gate.enter(orderKey, p.orderWaitMs)
  if (entered !== true && !(await entered)) return emailBusy(p, event)
  let result: Claimed | ReceiverResponse | OrderBusy
  try {
    for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
      result = await ask(p, key, event, ordering, startedAt, trace, true)
      if (!('busyMs' in result)) break
      if (performance.now() + pause - startedAt >= p.orderWaitMs) {
        result = emailBusy(p, event)
        break
      }
      await sleep(pause)
    }
  } catch (error) {
    p.gate.leave(orderKey)
    throw error
  }
  if ('claim' in result) {
    let held = true
    result.freeEmail = () => {
      if (!held) return
      held = false
      p.gate.leave(orderKey)
    }
    result.settle = result.freeEmail
    return result
  }
  p.gate.leave(orderKey)
  return result
}

/**
 * One claim: the claim, the answer when there is nothing to run, or that the email is busy
 * (`waits`: the caller asks again; otherwise that is answered 409 here, and never an OrderBusy).
 */
async function ask<Ctx>(
  p: Pipeline<Ctx>,
  key: string,
  event: WebhookEvent | undefined,
  ordering: EventOrdering,
  startedAt: number,
  trace: DeliveryTrace | undefined,
  waits: boolean,
): Promise<Claimed | ReceiverResponse | OrderBusy> {
  const askedAt = performance.now()
  const claiming = attempt(() => p.store.claim(key, ordering.claimOptions))
  const pending = trace === undefined ? claiming : trace.store('claim', claiming)
  let timedOut = false
  let result: Awaited<typeof pending>
  try {
    result = await p.deadlines.within(pending, p.storeMayHang ? askedAt + p.storeTimeoutMs : undefined, () => {
      timedOut = true
      // A claim that lands after we gave up would block retries until its lease ends: give it back.
      pending.then((late) => (late.status === 'acquired' ? p.store.release(late.claim) : false)).catch(() => {})
      return new Error(`store claim took longer than ${p.storeTimeoutMs} ms`)
    })
  } catch (cause) {
    // A timed-out claim that lands later is given back above, but one the store committed and then
    // failed to answer (a connection cut at queryTimeoutMs) is not known here, nor is one taken as the store failed.
    return p.fail(storeUnavailable(cause, timedOut ? p.storeTimeoutMs : undefined, true), event, 1000)
  }
  if (result.status === 'acquired') {
    const order = eventOrderOf(p, ordering, result)
    const fact = result.order?.fact
    trace?.claimed(result.claim.attempt, order.status)
    return {
      claim: result.claim,
      startedAt,
      order,
      completeOptions: ordering.completeOptions,
      fact,
      settle: undefined,
      freeEmail: undefined,
      trace,
    }
  }
  if (result.status === 'duplicate') {
    p.reporter.duplicates++
    return duplicateAnswer(event)
  }
  if (result.reason === 'order') return waits ? { busyMs: result.retryAfterMs } : emailBusy(p, event)
  const error = new WebhookHandlingError(
    'in_flight',
    'This event is being handled by another request right now; retry after the Retry-After delay.',
  )
  return p.fail(error, event, result.retryAfterMs)
}

/**
 * A settle that outlives the answer (a handler past its deadline, a complete tried again in the
 * background) holds the event's email in this process at most until the claim's lease ends: then
 * the store's order lock has lapsed too, and the email's next events must not meet 409 here.
 */
export function holdEmailUntilLeaseEnd<Ctx>(p: Pipeline<Ctx>, claimed: Claimed): void {
  const free = claimed.freeEmail
  if (free === undefined) return
  unref(setTimeout(free, Math.max(0, claimed.startedAt + p.leaseMs - performance.now())))
}

/** 409 to an event whose email another event still holds after the wait: the sender retries it shortly. */
function emailBusy<Ctx>(p: Pipeline<Ctx>, event: WebhookEvent | undefined): ReceiverResponse {
  const error = new WebhookHandlingError(
    'in_flight',
    `Another event of the same email is being handled right now (ordering: true handles one event of an email at a time, and this one waited ${p.orderWaitMs} ms, half of handlerTimeoutMs); retry after the Retry-After delay.`,
  )
  return p.fail(error, event, 1000)
}
