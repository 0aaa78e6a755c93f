/**
 * `createInboxProcessor`: the handlers run from a queue of your own (BullMQ, pg-boss, SQS), after
 * an inbox-mode receiver handed the verified event to it (`inbox.sink`). Each job goes through the
 * receiver's path from the claim on — dedup, ordering, facts, the handler deadline, the settle — so
 * a job the queue runs twice (a redelivery, a retried job) runs the handlers once. A failure throws,
 * so the queue retries the job with its own backoff.
 */
import { InboxItemError, WebhookHandlingError } from '../errors.js'
import { parseEnvelope, type WebhookEvent } from '../events.js'
import type { InboxItem } from '../store/inbox.js'
import type { DedupStore } from '../store/types.js'
import type { DeliveryTrace } from '../telemetry/trace.js'
import { claimKey } from './claim.js'
import { handleClaimed } from './handle.js'
import { renewClaimWhileHeld } from './heartbeat.js'
import { DEFAULT_RENEWED_LEASE_MS, LEASE_MARGIN_MS, MIN_RENEWED_LEASE_MS, renewable } from './inbox-options.js'
import { PACKAGE, resolveOptions } from './options.js'
import { orderingOf } from './order.js'
import { createPipeline, type Pipeline } from './pipeline.js'
import type { EmailEventHandlers, HandlerContext, ReceiverOptions, ReceiverResponse, ReceiverStats, WebhookOptions } from './types.js'

/** Deadline of a handler run from a queue when none is given: 5 minutes. */
const DEFAULT_HANDLER_TIMEOUT_MS = 300_000

/** Options of {@link createInboxProcessor}: the receiver's, without the secret (the event was verified before it was queued). */
export interface InboxProcessorOptions extends Omit<WebhookOptions, 'mode' | 'inbox' | 'toleranceSeconds' | 'maxBodyBytes'> {
  /**
   * The receiver's handlers, keyed by email event type: each queued job runs them through the
   * receiver's path from the claim on (dedup, ordering, the handler's deadline).
   */
  handlers?: EmailEventHandlers
}

/** Runs queued events' handlers. */
export interface InboxProcessor {
  /**
   * Handles one queued item: `'handled'`, or `'duplicate'` when it was already handled.
   * @throws {WebhookHandlingError} when it must be tried again: `handler_failed`, `handler_timeout` or `store_unavailable` (let your queue retry the job, an attempt), or `in_flight` (the event or its email is held elsewhere: delay the job by `retryAfterMs` without counting an attempt).
   * @throws {InboxItemError} when it can never be processed (another namespace's key, a payload that is not the event's envelope): do not retry it.
   */
  process(item: InboxItem): Promise<'handled' | 'duplicate'>
  stats(): ReceiverStats
  store(): DedupStore
}

/**
 * Builds the processor a queue worker calls for each job an inbox-mode receiver queued.
 * @param options Handlers and the receiver's options (the store must be the one the receiver deduplicates with).
 * @throws {TypeError} for invalid options, as `createReceiver`.
 * @example
 * const processor = createInboxProcessor({ handlers, store })
 * new Worker('email-webhooks', (job) => processor.process(job.data), { connection })
 */
export function createInboxProcessor(options: InboxProcessorOptions): InboxProcessor {
  if (options === null || typeof options !== 'object') throw new TypeError(`${PACKAGE} createInboxProcessor needs an options object.`)
  const handlerTimeoutMs = options.handlerTimeoutMs ?? DEFAULT_HANDLER_TIMEOUT_MS
  // No secret: nothing is verified here (resolveOptions does not read it; createVerifier would).
  // The lease is checked here, not there: a renewed one may be shorter than the handler's deadline.
  const resolved = resolveOptions({
    ...options,
    leaseMs: handlerTimeoutMs + LEASE_MARGIN_MS,
    handlerTimeoutMs,
  } as ReceiverOptions<HandlerContext>)
  // A store that renews leases gets a short one, renewed while the handler runs: a job whose
  // consumer died is not held by its claim for longer than that (your queue's own stall check
  // hands the job on meanwhile). A leaseMs of yours is kept as given, and renewed too.
  const heartbeat = renewable(resolved.store, undefined)
  const leaseMs = processorLease(options.leaseMs, heartbeat, handlerTimeoutMs)
  const p = createPipeline<HandlerContext>({ ...resolved, leaseMs }, options.onError)
  return {
    async process(item) {
      const trace = p.telemetry?.process(item.type, 0)
      try {
        const { result, answer } = await processItem(p, item, trace, heartbeat)
        trace?.endEntry(result, answer)
        return result
      } catch (error) {
        if (error instanceof InboxItemError) {
          trace?.endEntry('dead', { status: 500, outcome: 'retry', code: error.code })
          p.reporter.unprocessable(error)
        } else {
          trace?.endEntry('retry', error instanceof WebhookHandlingError ? { status: 503, outcome: 'retry', code: error.code } : undefined)
        }
        throw error
      }
    },
    stats: () => p.reporter.stats(),
    store: () => p.store,
  }
}

/**
 * The processor's lease: `leaseMs` as given or its default (30 s renewed while the handler runs, on
 * a store that can renew; else the handler's deadline and a minute).
 * @throws {TypeError} for a lease that is not whole ms, under 1 s when renewed, or not above the deadline when not.
 */
function processorLease(given: unknown, heartbeat: boolean, handlerTimeoutMs: number): number {
  if (given === undefined) return heartbeat ? DEFAULT_RENEWED_LEASE_MS : handlerTimeoutMs + LEASE_MARGIN_MS
  if (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 1) {
    throw new TypeError(`${PACKAGE} leaseMs must be a whole number of milliseconds ≥ 1, got ${String(given)}.`)
  }
  if (heartbeat && given < MIN_RENEWED_LEASE_MS) {
    throw new TypeError(
      `${PACKAGE} leaseMs (${given}) must be at least ${MIN_RENEWED_LEASE_MS}: the processor renews it every third while a handler runs.`,
    )
  }
  if (!heartbeat && given <= handlerTimeoutMs) {
    throw new TypeError(
      `${PACKAGE} leaseMs (${given}) must exceed handlerTimeoutMs (${handlerTimeoutMs}): this store cannot renew a lease while a handler runs (it has no extend()), so one lease must cover the handler.`,
    )
  }
  return given
}

/**
 * The event of a queued item, checked: its key is `<namespace>:<event id>` of this processor's
 * namespace, and its payload the envelope of that event.
 * @throws {InboxItemError} `wrong_namespace` or `invalid_item`: the item can never be processed.
 */
function parseItem(namespace: string, item: InboxItem): WebhookEvent {
  const key = typeof item?.key === 'string' ? item.key : undefined
  const prefix = `${namespace}:`
  if (key === undefined || !key.startsWith(prefix) || key.length === prefix.length) {
    const other = key === undefined ? 'no key' : key.includes(':') ? `namespace "${key.slice(0, key.indexOf(':'))}"` : `key "${key}"`
    throw new InboxItemError(
      'wrong_namespace',
      `${PACKAGE} this job was queued under ${other}, and this processor's namespace is "${namespace}": it would be deduplicated under the wrong key, so it is not processed, and retrying it cannot help. Give createInboxProcessor the receiver's namespace (the one its sink queued with), then add the job again.`,
    )
  }
  try {
    return parseEnvelope(String(item.payload), key.slice(prefix.length))
  } catch (cause) {
    throw new InboxItemError(
      'invalid_item',
      `${PACKAGE} the payload of job ${key} is not the event envelope its key names (${cause instanceof Error ? cause.message : String(cause)}); it is not processed, and retrying it cannot help. Jobs of the sink carry the verified body as received: check what else adds jobs to this queue.`,
      { cause },
    )
  }
}

/** One queued item through the receiver's path from the claim on; throws when the queue must try it again. */
async function processItem(
  p: Pipeline<HandlerContext>,
  item: InboxItem,
  trace: DeliveryTrace | undefined,
  heartbeat: boolean,
): Promise<{ result: 'handled' | 'duplicate'; answer: ReceiverResponse }> {
  const startedAt = performance.now()
  const event = parseItem(p.namespace, item)
  const id = event.id
  const claimed = await claimKey(p, item.key, event, orderingOf(p, event), trace)
  if (!('claim' in claimed)) {
    if (claimed.outcome === 'duplicate') return { result: 'duplicate', answer: claimed }
    if (claimed.code === 'in_flight') {
      // Held elsewhere: not a failure of this job. Its holder's lease can have ended after Retry-After.
      throw new WebhookHandlingError(
        'in_flight',
        `The event ${id} (or another event of its email) is being handled elsewhere; delay the job until its lease can have ended, without counting an attempt.`,
        { cause: claimed.cause, retryAfterMs: retryAfterOf(claimed) },
      )
    }
    throw new WebhookHandlingError('store_unavailable', `The store failed for the event ${id} (${claimed.code}); retry the job.`, {
      cause: claimed.cause,
    })
  }
  if (heartbeat) renewClaimWhileHeld(p, claimed, startedAt + p.handlerTimeoutMs + LEASE_MARGIN_MS)
  const answer = await handleClaimed(p, item.key, claimed, event, { id, timestamp: item.timestamp }, undefined)
  if (answer.status < 300) return { result: answer.outcome === 'duplicate' ? 'duplicate' : 'handled', answer }
  // The handler ran and its record is being tried again in the background (or the event was
  // taken over): the next try meets its lease, as in_flight. A failed or late handler is an attempt.
  const failed = answer.code === 'handler_failed' || answer.code === 'handler_timeout'
  throw new WebhookHandlingError(
    failed ? (answer.code as 'handler_failed' | 'handler_timeout') : 'in_flight',
    `The job of ${event.type} ${id} is not done (${answer.code}); ${failed ? 'let the queue retry it' : 'delay it until its record lands, without counting an attempt'}.`,
    failed ? { cause: answer.cause } : { cause: answer.cause, retryAfterMs: retryAfterOf(answer) },
  )
}

/** The longest delay of an in-flight job: its holder may well finish sooner than its lease (a copy of the job running now). */
const MAX_IN_FLIGHT_DELAY_MS = 2_000

/** The answer's Retry-After in ms (at least 1 s), at most MAX_IN_FLIGHT_DELAY_MS: a delayed try counts no attempt, so it may come back often. */
function retryAfterOf(answer: ReceiverResponse): number {
  const seconds = Number(answer.headers['retry-after'])
  return Math.min(MAX_IN_FLIGHT_DELAY_MS, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000)
}
