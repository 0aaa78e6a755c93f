/** The receiver's public types: handler context, handler maps, options, inputs, answers and counters. */
import type { WebhookHandlingError, WebhookVerificationError } from '../errors.js'
import type { EmailEventOf, EmailEventType, WebhookEvent } from '../events.js'
import type { WebhookHeaders } from '../headers.js'
import type { OrderKeyFunction } from '../ordering/key.js'
import type { StaleSkippableType } from '../ordering/skip.js'
import type { EventOrder } from '../ordering/status.js'
import type { WebhookSecret } from '../secret.js'
import type { InboxQueue, InboxSink, InboxStats } from '../store/inbox.js'
import type { DedupStore } from '../store/types.js'
import type { TelemetryOption } from '../telemetry/index.js'
import type { DeliveryOutcome } from '../telemetry/names.js'
import type { WebhookBody } from '../verify.js'
import type { EventSource } from './facts.js'

/** What every handler receives besides the event. Adapters add their own fields (Hono adds `c`). */
export interface HandlerContext {
  /** Aborts at the handler deadline (`handlerTimeoutMs`): stop work and throw, so the event is retried cleanly. */
  signal: AbortSignal
  /** 1 on the first claim of this event, more when an earlier attempt failed or timed out. */
  attempt: number
  /** The verified `webhook-timestamp`, seconds since the epoch. */
  timestamp: number
  /**
   * This event's order against the events already handled for the same email (or `orderKey`), with
   * `ordering: true`: `first`, `latest`, `stale` (a newer one was handled: `newestHandled` names its
   * type and time) or `unknown` (with `reason`: ordering is off, the store lacks the capability, or
   * `created_at`/`data.id` is unusable).
   */
  order: EventOrder
  /**
   * `'sender'` for the sender's own deliveries; `'reconcile'` for an event `reconcileEmails` built
   * from the email's event list (it was missed: the endpoint was disabled, or its delivery expired).
   */
  source: EventSource
}

/** Sees each stale event that `skipStale` acknowledged without running a handler, once it is recorded. What it throws is ignored. */
export type StaleObserver = (event: WebhookEvent, order: EventOrder & { status: 'stale' }) => void

/** A handler for one email event type. Resolve when the work is durably done; throw to get a retry. */
export type EmailEventHandler<T extends EmailEventType, Ctx = HandlerContext> = (
  event: EmailEventOf<T>,
  ctx: Ctx,
) => unknown | Promise<unknown>

/** Handlers keyed by email event type; only the known types are accepted as keys. */
export type EmailEventHandlers<Ctx = HandlerContext> = { [T in EmailEventType]?: EmailEventHandler<T, Ctx> }

/** A handler for any event, including types this version does not know. */
export type WebhookEventHandler<Ctx = HandlerContext> = (event: WebhookEvent, ctx: Ctx) => unknown | Promise<unknown>

/** What `onError` learns about a refused or failed delivery; never the secret, the signature or the body. */
export interface ErrorInfo {
  /** The HTTP status answered (200 for a signed body that is not a valid envelope: it is acknowledged). */
  status: number
  /** The verified event id, when verification got that far. */
  eventId?: string
  /** The event type, when the envelope was parsed. */
  type?: string
}

/** Where the receiver writes its default log lines (5xx-class failures, acknowledged invalid envelopes). */
export interface WebhookLogger {
  error(message: string): void
  warn(message: string): void
  /** Optional: start-up facts, such as which SQLite file the default store uses (`console` has it). */
  info?(message: string): void
}

/** Counts kept by each receiver since it was built; read them with `stats()`. */
export interface ReceiverStats {
  /** Deliveries answered 2xx after a handler ran (`onEvent`, the type's handler, or `onUnknown`) and the event was recorded. */
  handled: number
  /** Deliveries answered 2xx and recorded without any handler: a known type without a handler, an unknown type without `onUnknown` (no `onEvent`). */
  acknowledged: number
  /** Redeliveries of an already handled event, answered 2xx without running a handler. */
  duplicates: number
  /** Signed, in-window deliveries whose body is not a valid envelope: acknowledged (2xx), recorded, reported. */
  ignored: number
  /** Stale events acknowledged (2xx) and recorded without a handler, as `skipStale` asks. */
  skipped: number
  /** Inbox mode: deliveries answered 2xx once recorded in the inbox (their handlers run in the worker). */
  queued: number
  /** Inbox mode: entries this process's worker gave up on (dead letters, kept with their last error). */
  dead: number
  /** Refusals before any handler ran (401, 413), by error code: `signature_mismatch`, `timestamp_too_old`, … */
  rejected: Record<string, number>
  /** Authentic deliveries answered non-2xx so the sender retries (409, 5xx), by error code. */
  failed: Record<string, number>
  /**
   * Every delivery by outcome, under the names of the `email_webhooks.deliveries` metric's
   * `email_webhooks.outcome`: handled, queued, duplicate, skipped, ignored, rejected, in_flight, failed.
   */
  deliveries: Partial<Record<DeliveryOutcome, number>>
}

/** Options shared by `createReceiver` and every adapter's `emailWebhook`. */
export interface WebhookOptions<Ctx = HandlerContext> {
  /** Runs for every verified event (known or unknown) before its typed handler. */
  onEvent?: WebhookEventHandler<Ctx>
  /** Runs for event types that are not email events known to this version; the answer is 2xx after it resolves. */
  onUnknown?: WebhookEventHandler<Ctx>
  /**
   * Observes every refused or failed delivery (401, 409, 413, 5xx) and every acknowledged invalid
   * envelope, with `{ status, eventId?, type? }`. When given, it replaces the default log line.
   * What it throws is ignored.
   */
  onError?: (error: WebhookVerificationError | WebhookHandlingError, info: ErrorInfo) => void
  /**
   * Where the default log lines go when no `onError` is given: `{ error(line), warn(line) }` (and
   * `info`, for the start-up lines, when it has one); `false` silences them.
   * @defaultValue `console`
   */
  logger?: WebhookLogger | false
  /**
   * Dedup store: a `DedupStore`, or `'memory'` to opt into the in-process store (not durable). Default
   * on Node: a SQLite file (`EMAIL_WEBHOOKS_DB` or `./.email-webhooks/dedup.db`), opened when the
   * receiver is built (an error there is thrown, never a silent memory fallback). On Bun, Deno and
   * Workers the default is memory, with a warning at construction.
   * @defaultValue a SQLite file on Node, memory elsewhere
   */
  store?: DedupStore | 'memory'
  /**
   * Prefix of dedup keys (`namespace:webhook-id`).
   * @defaultValue `"default"`
   */
  namespace?: string
  /**
   * Allowed timestamp distance in seconds, inclusive, in the past and in the future.
   * @defaultValue `300`
   */
  toleranceSeconds?: number
  /**
   * Largest body accepted, whole bytes. A larger one gets 413: before it is read when its
   * `content-length` says so, else as soon as the stream passes the limit.
   * @defaultValue `1048576` (1 MiB)
   */
  maxBodyBytes?: number
  /**
   * How long a claim holds before another worker may take the event over (after a crash), whole ms.
   * Must exceed handlerTimeoutMs (checked when the receiver is built); keep it above
   * handlerTimeoutMs + storeTimeoutMs so a slow complete cannot outlive the lease.
   * @defaultValue `30000`
   */
  leaseMs?: number
  /**
   * How long handled events are remembered, whole ms: longer than the sender's retry span. With
   * `ordering: true`, also their facts, so `reconcileEmails` sends only events younger than this
   * (give it the same `retentionMs`).
   * @defaultValue 7 days
   */
  retentionMs?: number
  /**
   * Handler deadline, whole ms counted from the (first) claim: `ctx.signal` aborts and the answer
   * is 503 `handler_timeout`. Must be below `leaseMs`.
   * @defaultValue `7000`, and at most 80 % of `leaseMs`
   */
  handlerTimeoutMs?: number
  /**
   * Longest wait for the store's claim, and again for its complete, before answering 503
   * `store_unavailable`, whole ms.
   * @defaultValue `1500`
   */
  storeTimeoutMs?: number
  /**
   * Clock in milliseconds since the epoch for the timestamp window.
   * @defaultValue `Date.now`
   */
  now?: () => number
  /**
   * Keep a high-water mark per email in the store and tell handlers where each event stands
   * (`ctx.order`), and handle one event of an email at a time (the next waits, at most half of
   * `handlerTimeoutMs`, then gets 409 `in_flight`). Off by default, as it costs more rows written
   * per event (see the Ordering page of the docs). Off, `ctx.order` is `unknown` with reason
   * `ordering_off`. Needed by `orderKey`, `skipStale` and `onStale`.
   * @defaultValue `false`
   */
  ordering?: boolean
  /**
   * Order key of events that are not `email.*` events (those are keyed by `data.id`): events with the
   * same key are ordered against each other in `ctx.order`. Return `null` or `undefined` for "not
   * ordered" (the default for every such event). What it throws only makes that event's order
   * `unknown`. Needs `ordering: true`.
   * @defaultValue none: events that are not email events are not ordered
   */
  orderKey?: OrderKeyFunction
  /**
   * Acknowledge a stale message-state event without running any handler when the newer event
   * already handled for its email replaces it: `true` for every type that may be skipped, or a
   * list of them (`email.queued`, `email.submitted`, `email.deferred`, `email.uncertain`; see
   * `STALE_SKIPPABLE_TYPES`). Skipped only when the newer handled event sets the message state too;
   * facts (bounces, complaints, rejections, recipient events, recovered submissions) always run.
   * Answered 2xx `{"ok":true,"skipped":"stale"}`, recorded as done, counted in `stats().skipped`;
   * `onStale` sees each. Default: none is skipped, handlers decide with `ctx.order`.
   * Needs `ordering: true` and a store that keeps marks.
   * @defaultValue none is skipped
   */
  skipStale?: true | StaleSkippableType[]
  /**
   * `(event, order)`: observes each event skipped by `skipStale`, after it is recorded. What it
   * throws is ignored. Needs `skipStale` (refused without it: it would never be called).
   */
  onStale?: StaleObserver
  /**
   * `'request'` (default): the answer is 2xx once the handler finished and the event is recorded,
   * inside the sender's 10 s. `'inbox'`: 2xx `{"ok":true,"queued":true}` once the verified event is
   * recorded durably in the store's inbox (or handed to `inbox.sink`); the handlers run after the
   * answer, in a worker, with retries and dead letters (see `inbox`).
   * @defaultValue `'request'`
   */
  mode?: 'request' | 'inbox'
  /**
   * Inbox mode's worker and routing (`inRequest`, `sink`, `worker`, `concurrency`, `maxAttempts`,
   * `handlerTimeoutMs`, `leaseMs`, `retryBaseMs`, `retryMaxMs`, `pollMs`); needs `mode: 'inbox'`.
   */
  inbox?: InboxOptions
  /**
   * OpenTelemetry spans and metrics (their names: the Observability page of the docs). On by default
   * on Node when `@opentelemetry/api` is installed (it costs next to nothing until an SDK is
   * registered); `false` turns it off; elsewhere (Bun, Deno, Workers) pass the API: `{ api }` from
   * `import * as api from '@opentelemetry/api'`. `tracerProvider` / `meterProvider` replace the global ones.
   * @defaultValue on when `@opentelemetry/api` is installed (Node)
   */
  telemetry?: TelemetryOption
}

/** Options of inbox mode (`mode: 'inbox'`). */
export interface InboxOptions {
  /** Email event types still handled in the request, as in `'request'` mode (e.g. `['email.bounced']`). */
  inRequest?: EmailEventType[]
  /**
   * Hand events to a queue you run instead of the store's inbox (BullMQ, pg-boss, Amazon SQS,
   * Cloudflare Queues: the queues page of the docs); your workers then run the handlers
   * (`createInboxProcessor`). No built-in worker.
   */
  sink?: InboxSink
  /**
   * Run the worker in this process; false when `email-webhooks inbox work` runs it elsewhere.
   * @defaultValue `true` with the store's inbox
   */
  worker?: boolean
  /**
   * Entries handled at once by this process's worker.
   * @defaultValue `4`
   */
  concurrency?: number
  /**
   * Attempts of an entry before it is dead (kept with its last error, its message only).
   * @defaultValue `10`
   */
  maxAttempts?: number
  /**
   * Deadline of a handler run by the worker, whole ms.
   * @defaultValue `300000` (5 min)
   */
  handlerTimeoutMs?: number
  /**
   * How long the worker holds an entry and its event's claim without renewing them, whole ms. On a
   * store that can renew leases (every built-in store: `extend`, and its inbox's `renew`) the worker
   * renews both every third of it while the handler runs, so it is short: at least 1,000, and an
   * entry of a worker that died is taken again after it. On a store that cannot, one lease covers
   * the handler, and it must exceed handlerTimeoutMs.
   * @defaultValue `30000`; handlerTimeoutMs + 60,000 on a store that cannot renew leases
   */
  leaseMs?: number
  /**
   * First retry wait after a failed attempt, whole ms, doubling per attempt, with jitter (a wait is
   * half its step plus up to as much again at random).
   * @defaultValue `1000`
   */
  retryBaseMs?: number
  /**
   * Longest retry wait, whole ms.
   * @defaultValue `600000` (10 min)
   */
  retryMaxMs?: number
  /**
   * How often an idle worker looks for entries, whole ms (it also wakes when this process queues one).
   * @defaultValue `1000`
   */
  pollMs?: number
}

/** What one step of the inbox worker did. */
export type InboxWorkResult = 'idle' | 'handled' | 'duplicate' | 'retry' | 'dead' | 'deferred'

/** How many steps of an inbox worker had each result (idle steps are not counted). */
export type InboxWorkCounts = Record<Exclude<InboxWorkResult, 'idle'>, number>

/** An entry the inbox worker gave up on (kept as dead, with its last error); never the payload. */
export interface InboxDeadLetter {
  /** The entry's key (`namespace:webhook-id`). */
  key: string
  /** The webhook-id (the key without its namespace). */
  eventId: string
  type: string
  /** Attempts made, the last one included. */
  attempts: number
  /** The last attempt's error message. */
  error: string
}

/** A receiver's inbox (inbox mode): its worker and counts. */
export interface ReceiverInbox {
  /** The queue the receiver records into, when it is the store's (not a sink). */
  readonly queue: InboxQueue | undefined
  /** Starts this process's worker (it starts with the receiver unless `inbox.worker` is false). */
  start(): void
  /** Stops taking entries and waits for the handlers that run (each within its deadline). */
  stop(): Promise<void>
  /** Takes and handles one due entry, if any: for tests, scripts and `email-webhooks inbox work`. */
  work(): Promise<InboxWorkResult>
  /** Pending, running and dead entries, and the lag: how long the oldest pending entry has waited. */
  stats(): Promise<InboxStats & { lagMs: number | null }>
}

/** Options of `createReceiver`. */
export interface ReceiverOptions<Ctx = HandlerContext> extends WebhookOptions<Ctx> {
  /**
   * The endpoint secret, or several during a rotation (any one verifies). An empty secret, or one
   * with leading or trailing white space, is refused when the receiver is built, with a `TypeError`
   * that says so.
   */
  secret: WebhookSecret
  /** Handlers keyed by email event type; a key that is not one does not compile (and is refused at run time). */
  handlers?: EmailEventHandlers<Ctx>
}

/** The outcome of one delivery, in words a log or a demo can show. */
export type ReceiveOutcome = 'handled' | 'queued' | 'duplicate' | 'unknown_type' | 'ignored' | 'skipped' | 'rejected' | 'retry'

/** The answer to send: status, headers and a small JSON body. */
export interface ReceiverResponse {
  status: number
  headers: Record<string, string>
  body: string
  outcome: ReceiveOutcome
  /** The stable error code of a non-2xx answer (and `invalid_envelope` for an acknowledged bad envelope). */
  code?: string
  /** The verified event, when parsing got that far. */
  event?: WebhookEvent
  /** The failure behind a non-2xx answer (a handler's error, the store's), for logs and the inbox worker; never sent. */
  cause?: unknown
}

/** Input of `Receiver.receive`. */
export interface ReceiveInput<Extra = object> {
  headers: WebhookHeaders
  /** The raw body, exactly as received. */
  body: WebhookBody
  /** Extra fields for the handler context (adapters pass their framework context here). */
  context?: Extra
  /**
   * A cap on this request's lease, whole ms: the claim holds the event at most this long (and at
   * most `leaseMs`). A serverless adapter passes the time its invocation has left (the Lambda
   * adapter: `context.getRemainingTimeInMillis()`), so a claim left behind by an invocation the
   * platform stopped (a timeout) is free again when the invocation ends, not `leaseMs` later.
   * Only for platforms that stop the request at that time: the handler deadline is not shortened.
   */
  leaseCapMs?: number
}

/** A configured pipeline; adapters call `receive` for each request. */
export interface Receiver<Extra = object> {
  receive(input: ReceiveInput<Extra>): Promise<ReceiverResponse>
  /**
   * The dedup store in use (opened when the receiver was built), for admin scripts and recovery:
   * `lookup` what it knows of an event, or pass it to `recoverEndpoint`.
   */
  store(): DedupStore
  /** The answer to a request refused before `receive` (body too large while streaming, raw body gone); reports it. */
  refuse(error: WebhookVerificationError | WebhookHandlingError): ReceiverResponse
  /** A snapshot of this receiver's counters (handled, duplicates, rejections and failures by code). */
  stats(): ReceiverStats
  /** The body limit adapters must enforce while reading. */
  readonly maxBodyBytes: number
  /** Inbox mode: the worker and counts; undefined in request mode. */
  readonly inbox: ReceiverInbox | undefined
}
