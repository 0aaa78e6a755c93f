/**
 * Inbox mode's options, checked once when the receiver is built: where events go (the store's
 * inbox, or a sink), which types stay in the request, and the worker's deadlines and retries.
 */
import { EMAIL_EVENT_TYPES, isEmailEventType } from '../events.js'
import type { InboxQueue, InboxSink } from '../store/inbox.js'
import type { DedupStore } from '../store/types.js'
import { didYouMean } from './names.js'
import type { InboxOptions } from './types.js'

/** The inbox options this version knows (`inbox: { … }`). */
const INBOX_OPTIONS = [
  'inRequest',
  'sink',
  'worker',
  'concurrency',
  'maxAttempts',
  'handlerTimeoutMs',
  'leaseMs',
  'retryBaseMs',
  'retryMaxMs',
  'pollMs',
] as const

const DEFAULT_CONCURRENCY = 4
const DEFAULT_MAX_ATTEMPTS = 10
const DEFAULT_HANDLER_TIMEOUT_MS = 300_000
/** How long a handler past its deadline may still hold its event before another worker takes it over. */
export const LEASE_MARGIN_MS = 60_000
/** The lease of an entry and of its event's claim when the store can renew them while the handler runs (a heartbeat every third). */
export const DEFAULT_RENEWED_LEASE_MS = 30_000
/** The shortest renewed lease: a beat every third of it must have time to reach the store. */
export const MIN_RENEWED_LEASE_MS = 1_000
const DEFAULT_RETRY_BASE_MS = 1_000
const DEFAULT_RETRY_MAX_MS = 600_000
const DEFAULT_POLL_MS = 1_000

/** Inbox mode after the checks. */
export interface ResolvedInbox {
  /** Where a verified event is recorded. */
  sink: InboxSink
  /** The store's inbox the worker takes from (undefined with a sink of the user's). */
  queue: InboxQueue | undefined
  inRequest: Set<string>
  worker: boolean
  concurrency: number
  maxAttempts: number
  handlerTimeoutMs: number
  leaseMs: number
  /**
   * Whether the worker renews an entry's lease and its event's claim while the handler runs (the
   * store has `extend` and its inbox `renew`): then `leaseMs` is short (30 s by default) and a dead
   * worker's entry is taken again after it; else one lease covers the handler's deadline and a minute.
   */
  heartbeat: boolean
  retryBaseMs: number
  retryMaxMs: number
  pollMs: number
}

function whole(prefix: string, name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`${prefix} inbox.${name} must be a positive whole number, got ${String(value)}.`)
  }
  return value
}

/** Whether the worker can renew its leases while a handler runs: the store has `extend` and its inbox `renew`. */
export function renewable(store: DedupStore, queue: InboxQueue | undefined): boolean {
  return typeof store.extend === 'function' && (queue === undefined || typeof queue.renew === 'function')
}

/**
 * Inbox mode's settings, or undefined in request mode.
 * @throws {TypeError} for a mode other than 'request' or 'inbox', inbox options without inbox mode, a store without an inbox (and no sink), or a bad inbox option.
 */
export function resolveInbox(
  options: { mode?: unknown; inbox?: InboxOptions },
  store: DedupStore,
  prefix: string,
): ResolvedInbox | undefined {
  const { mode, inbox = {} } = options
  if (mode !== undefined && mode !== 'request' && mode !== 'inbox') throw new TypeError(`${prefix} mode must be 'request' or 'inbox'.`)
  if (mode !== 'inbox') {
    if (options.inbox !== undefined) throw new TypeError(`${prefix} inbox options need mode: 'inbox'.`)
    return undefined
  }
  if (inbox === null || typeof inbox !== 'object') throw new TypeError(`${prefix} inbox must be an object of options.`)
  for (const name of Object.keys(inbox)) {
    if ((INBOX_OPTIONS as readonly string[]).includes(name)) continue
    throw new TypeError(
      `${prefix} unknown inbox option "${name}": it would be ignored.${didYouMean(name, INBOX_OPTIONS)} The inbox options are ${INBOX_OPTIONS.join(', ')}.`,
    )
  }
  const { sink } = inbox
  if (sink !== undefined && (sink === null || typeof sink !== 'object' || typeof sink.enqueue !== 'function')) {
    throw new TypeError(`${prefix} inbox.sink must have enqueue(item, { retentionMs }) (see InboxSink).`)
  }
  const queue = sink === undefined ? store.inbox : undefined
  if (sink === undefined && queue === undefined) {
    throw new TypeError(
      `${prefix} mode: 'inbox' records events in the store's inbox, and this store has none (store.inbox). Use a built-in store (SQLite, PostgreSQL, Redis; memory for tests), or pass inbox.sink.`,
    )
  }
  if (inbox.worker === true && sink !== undefined) {
    throw new TypeError(
      `${prefix} inbox.worker runs the store's inbox; with inbox.sink your queue's workers run the handlers (createInboxProcessor).`,
    )
  }
  const inRequest = inbox.inRequest ?? []
  if (!Array.isArray(inRequest))
    throw new TypeError(`${prefix} inbox.inRequest must be a list of email event types, such as ['email.bounced'].`)
  for (const type of inRequest as unknown[]) {
    if (typeof type === 'string' && isEmailEventType(type)) continue
    const hint = typeof type === 'string' ? didYouMean(type, EMAIL_EVENT_TYPES) : ''
    throw new TypeError(
      `${prefix} inbox.inRequest lists ${typeof type === 'string' ? `"${type}"` : String(type)}, which is not an email event type.${hint} It must be a list of email event types, such as ['email.bounced'].`,
    )
  }
  const handlerTimeoutMs = whole(prefix, 'handlerTimeoutMs', inbox.handlerTimeoutMs, DEFAULT_HANDLER_TIMEOUT_MS)
  const heartbeat = renewable(store, queue)
  const leaseMs = whole(prefix, 'leaseMs', inbox.leaseMs, heartbeat ? DEFAULT_RENEWED_LEASE_MS : handlerTimeoutMs + LEASE_MARGIN_MS)
  if (heartbeat && leaseMs < MIN_RENEWED_LEASE_MS) {
    throw new TypeError(
      `${prefix} inbox.leaseMs (${leaseMs}) must be at least ${MIN_RENEWED_LEASE_MS}: the worker renews the lease every third of it while a handler runs.`,
    )
  }
  if (!heartbeat && queue !== undefined && leaseMs <= handlerTimeoutMs) {
    throw new TypeError(
      `${prefix} inbox.leaseMs (${leaseMs}) must exceed inbox.handlerTimeoutMs (${handlerTimeoutMs}): this store cannot renew a lease while a handler runs (it has no extend(), or its inbox no renew()), so one lease must cover the handler.`,
    )
  }
  const retryBaseMs = whole(prefix, 'retryBaseMs', inbox.retryBaseMs, DEFAULT_RETRY_BASE_MS)
  return {
    sink: sink ?? (queue as InboxQueue),
    queue,
    inRequest: new Set(inRequest),
    worker: queue !== undefined && inbox.worker !== false,
    concurrency: whole(prefix, 'concurrency', inbox.concurrency, DEFAULT_CONCURRENCY),
    maxAttempts: whole(prefix, 'maxAttempts', inbox.maxAttempts, DEFAULT_MAX_ATTEMPTS),
    handlerTimeoutMs,
    leaseMs,
    heartbeat,
    retryBaseMs,
    retryMaxMs: Math.max(retryBaseMs, whole(prefix, 'retryMaxMs', inbox.retryMaxMs, DEFAULT_RETRY_MAX_MS)),
    pollMs: whole(prefix, 'pollMs', inbox.pollMs, DEFAULT_POLL_MS),
  }
}
