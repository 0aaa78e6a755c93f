/**
 * The receiver pipeline (DESIGN.md), read top to bottom in `receive`:
 * read → verify → parse → claim → dispatch → settle.
 * Adapters give it the raw body and the headers and write back the answer it returns.
 * A 2xx is returned only after the store's `complete` has resolved.
 */
import { WebhookVerificationError } from '../errors.js'
import { type EmailEventType, parseEnvelope, type WebhookEvent } from '../events.js'
import type { DeliveryTrace } from '../telemetry/trace.js'
import { createVerifier, type VerifiedWebhook, type WebhookBody } from '../verify.js'
import { bodyTooLargeError } from './answers.js'
import { claimKey } from './claim.js'
import { enqueueEvent } from './enqueue.js'
import { handleClaimed } from './handle.js'
import type { CheckedEmailEventHandlers } from './handler-keys.js'
import type { ResolvedInbox } from './inbox-options.js'
import { queueStats, workerPipeline } from './inbox-worker.js'
import { PACKAGE, type ResolvedOptions, resolveOptions } from './options.js'
import { type EventOrdering, orderingOf } from './order.js'
import { storeName } from './order-options.js'
import { createPipeline, type Pipeline } from './pipeline.js'
import type { HandlerContext, ReceiveInput, Receiver, ReceiverInbox, ReceiverOptions, ReceiverResponse } from './types.js'
import { InboxWorker } from './worker.js'

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
 * @param options.handlers Handlers keyed by email event type (a misspelt key fails to compile, saying which type it likely meant).
 * @param options.store Dedup store; default SQLite on Node (`EMAIL_WEBHOOKS_DB` or `./.email-webhooks/dedup.db`), `'memory'` to opt out of durability.
 * @throws {TypeError} when a secret or an option is invalid.
 * @throws {DedupStoreError} when no store is given and Node's default SQLite file cannot be opened.
 * @example
 * const receiver = createReceiver({ secret, handlers: { 'email.bounced': (e) => markBounced(e.data.id) } })
 * const answer = await receiver.receive({ headers: request.headers, body: await request.arrayBuffer() })
 */
export function createReceiver<Extra = object, K extends string = EmailEventType>(
  options: ReceiverOptions<HandlerContext & Extra> & { handlers?: CheckedEmailEventHandlers<K, HandlerContext & Extra> },
): Receiver<Extra> {
  if (options === null || typeof options !== 'object') throw new TypeError(`${PACKAGE} createReceiver needs an options object.`)
  const verify = createVerifier(options)
  const resolved = resolveOptions(options)
  const p = createPipeline(resolved, options.onError)
  const inbox = p.inbox ? createInbox(p, resolved, p.inbox) : undefined

  async function receive(input: ReceiveInput<Extra>): Promise<ReceiverResponse> {
    const trace = p.telemetry?.receive(input.headers)
    if (trace === undefined) return p.answered(await steps(input, undefined), undefined)
    let answer: ReceiverResponse
    try {
      answer = await steps(input, trace)
    } catch (error) {
      trace.end({ status: 500, outcome: 'retry', code: 'internal_error' }, 'failed', 'internal_error')
      throw error
    }
    return p.answered(answer, trace)
  }

  async function steps(input: ReceiveInput<Extra>, trace: DeliveryTrace | undefined): Promise<ReceiverResponse> {
    const { headers, body } = input
    if (exceeds(body, p.maxBodyBytes)) return p.fail(bodyTooLargeError(p.maxBodyBytes))
    let verified: VerifiedWebhook
    const verifyDone = trace?.verify()
    try {
      // node:crypto answers synchronously: no await (Web Crypto's answer is a promise).
      const result = verify(headers, body)
      verified = result instanceof Promise ? await result : result
      verifyDone?.()
    } catch (error) {
      verifyDone?.(error)
      if (error instanceof WebhookVerificationError) return p.fail(error)
      throw error
    }
    p.reporter.verified()
    const parsed = parse(body, verified.id)
    const event = parsed instanceof WebhookVerificationError ? undefined : parsed
    const key = `${p.namespace}:${verified.id}`
    const ordering = capLease(orderingOf(p, event), input.leaseCapMs)
    if (event !== undefined && p.inbox !== undefined && !p.inbox.inRequest.has(event.type)) {
      return await enqueueEvent(p, key, event, body, verified.timestamp, ordering, trace)
    }
    const claimed = await claimKey(p, key, event, ordering, trace)
    if (!('claim' in claimed)) return claimed
    // `return await`: returning the promise itself would cost two more microtask jobs.
    return await handleClaimed(p, key, claimed, parsed, verified, input.context)
  }

  return {
    receive,
    store: () => p.store,
    refuse: (error) => {
      // `answered` counts for metrics only while the meter provider meters: look it up (a refusal may come first).
      p.telemetry?.instruments()
      return p.answered(p.fail(error), undefined)
    },
    stats: () => p.reporter.stats(),
    maxBodyBytes: p.maxBodyBytes,
    inbox,
  }
}

/** The event's store options with the lease cut to `capMs` (a serverless invocation's time left), when that is shorter. */
function capLease(ordering: EventOrdering, capMs: number | undefined): EventOrdering {
  if (typeof capMs !== 'number' || !(capMs < ordering.claimOptions.leaseMs)) return ordering
  return { ...ordering, claimOptions: { ...ordering.claimOptions, leaseMs: Math.max(1, Math.floor(capMs)) } }
}

/** Inbox mode: the worker over the store's inbox (on a pipeline with the inbox's deadlines), started unless `inbox.worker` is false. */
function createInbox<Extra>(
  p: Pipeline<HandlerContext & Extra>,
  resolved: ResolvedOptions<HandlerContext & Extra>,
  settings: ResolvedInbox,
): ReceiverInbox {
  const { queue } = settings
  const worker = queue
    ? new InboxWorker(workerPipeline(resolved, settings, undefined, { reporter: p.reporter, telemetry: p.telemetry }), queue, settings)
    : undefined
  if (worker) p.wake = () => worker.wake()
  if (queue && p.telemetry) p.telemetry.observeInbox(() => queueStats(queue))
  if (worker && settings.worker) worker.start()
  p.reporter.inboxMode({
    store: storeName(p.store),
    sink: !queue,
    worker: worker !== undefined && settings.worker,
    concurrency: settings.concurrency,
    maxAttempts: settings.maxAttempts,
    inRequest: [...settings.inRequest],
  })
  const noWorker = () =>
    new TypeError(`${PACKAGE} this receiver hands events to inbox.sink: your queue's workers run the handlers (createInboxProcessor).`)
  return {
    queue,
    start: () => {
      if (!worker) throw noWorker()
      worker.start()
    },
    stop: async () => worker?.stop(),
    work: () => (worker ? worker.work() : Promise.reject(noWorker())),
    stats: async () => {
      if (!queue) throw noWorker()
      return queueStats(queue)
    },
  }
}

export { bodyTooLargeError } from './answers.js'
export { type EventSource, RECONCILE_FIELD } from './facts.js'
export type { CheckedEmailEventHandlers, NearestEmailEventTypes, UnknownHandlerKey } from './handler-keys.js'
export {
  createInboxWorker,
  type InboxWorkerHandle,
  type InboxWorkerOptions,
  type InboxWorkerSettings,
} from './inbox-worker.js'
export {
  DEFAULT_HANDLER_TIMEOUT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_NAMESPACE,
  DEFAULT_RETENTION_MS,
  DEFAULT_STORE_TIMEOUT_MS,
} from './options.js'
export { createInboxProcessor, type InboxProcessor, type InboxProcessorOptions } from './processor.js'
export type * from './types.js'
