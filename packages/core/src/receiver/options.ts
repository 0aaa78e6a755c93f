/**
 * The receiver's options: defaults as constants, and every check done once, when the receiver
 * is built. The defaults answer inside the sender's 10 s: a claim (≤ storeTimeoutMs) and the
 * handler share handlerTimeoutMs (7 s), the complete gets storeTimeoutMs (1.5 s) more, so the
 * slowest answer leaves after 8.5 s; the 30 s lease outlives all of it.
 */
import { getDefaultStore } from '#default-store'
import { DEFAULT_NAMESPACE, DEFAULT_RETENTION_MS } from '../defaults.js'
import { PACKAGE } from '../errors.js'
import { EMAIL_EVENT_TYPES, isEmailEventType } from '../events.js'
import type { OrderInputOptions } from '../ordering/key.js'
import { DedupStoreError } from '../store/errors.js'
import { MemoryDedupStore } from '../store/memory/index.js'
import type { DedupStore } from '../store/types.js'
import { resolveTelemetry, type TelemetryOption } from '../telemetry/index.js'
import type { OtelApi } from '../telemetry/otel.js'
import { type ResolvedInbox, resolveInbox } from './inbox-options.js'
import { didYouMean } from './names.js'
import { type OrderingMode, orderingMode, skipStaleTest, storeName } from './order-options.js'
import type { ReceiverOptions, StaleObserver, WebhookEventHandler, WebhookLogger } from './types.js'

export { PACKAGE } from '../errors.js'
/** Largest body accepted by default: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES: number = 1024 * 1024
/** How long a claim holds by default before another worker may take the event over (after a crash). */
export const DEFAULT_LEASE_MS: number = 30_000
export { DEFAULT_NAMESPACE, DEFAULT_RETENTION_MS } from '../defaults.js'
/** Default handler deadline, counted from the claim; with the complete's store time it stays under the sender's 10 s. */
export const DEFAULT_HANDLER_TIMEOUT_MS: number = 7_000
/** Default longest wait for the store's claim, and again for its complete. */
export const DEFAULT_STORE_TIMEOUT_MS: number = 1_500

/** Options after the checks, with defaults filled in. */
export interface ResolvedOptions<Ctx> {
  handlers: Record<string, WebhookEventHandler<Ctx> | undefined>
  onEvent: WebhookEventHandler<Ctx> | undefined
  onUnknown: WebhookEventHandler<Ctx> | undefined
  namespace: string
  maxBodyBytes: number
  leaseMs: number
  retentionMs: number
  handlerTimeoutMs: number
  storeTimeoutMs: number
  store: DedupStore
  logger: WebhookLogger | undefined
  /** `on`: the receiver passes `order` to claim and complete (`ordering: true` and a store that keeps marks). */
  ordering: OrderingMode
  orderInputOptions: OrderInputOptions
  /** Inbox mode's settings; undefined in request mode. */
  inbox: ResolvedInbox | undefined
  /** Whether a stale event of this type, older than a handled one of `newerType`, is acknowledged without a handler; undefined: none is. */
  skipStale: ((type: string, newerType: string) => boolean) | undefined
  onStale: StaleObserver | undefined
  /** The OpenTelemetry API when telemetry is on (found, or given), and the option that asked for it. */
  otel: { api: OtelApi; option: TelemetryOption | undefined } | undefined
}

function wholePositive(name: string, value: unknown, fallback: number, unit: 'milliseconds' | 'bytes'): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`${PACKAGE} ${name} must be a positive whole number of ${unit}, got ${String(value)}.`)
  }
  return value
}

function checkHandlers<Ctx>(options: ReceiverOptions<Ctx>): Record<string, WebhookEventHandler<Ctx> | undefined> {
  const handlers = (options.handlers ?? {}) as Record<string, WebhookEventHandler<Ctx> | undefined>
  if (typeof handlers !== 'object') throw new TypeError(`${PACKAGE} handlers must be an object keyed by event type.`)
  for (const [type, handler] of Object.entries(handlers)) {
    if (!isEmailEventType(type)) {
      throw new TypeError(
        `${PACKAGE} "${type}" is not an email event type.${didYouMean(type, EMAIL_EVENT_TYPES)} Use one of EMAIL_EVENT_TYPES, or onUnknown for other types.`,
      )
    }
    if (handler !== undefined && typeof handler !== 'function')
      throw new TypeError(`${PACKAGE} the handler for "${type}" must be a function.`)
  }
  for (const name of ['onEvent', 'onUnknown', 'onError', 'onStale', 'orderKey'] as const) {
    const fn = options[name]
    if (fn !== undefined && typeof fn !== 'function') throw new TypeError(`${PACKAGE} ${name} must be a function.`)
  }
  return handlers
}

/** For a string given as the store ('sqlite', a file path): the way to the SQLite store. */
function stringStoreHint(store: unknown): string {
  if (typeof store !== 'string') return ''
  const what =
    store.toLowerCase() === 'sqlite' ? 'For the SQLite store' : 'A string is not a store (a file path is not taken here): for a SQLite file'
  return ` ${what}, leave store out: it is the default on Node (a file at EMAIL_WEBHOOKS_DB, else ./.email-webhooks/dedup.db), or pass new SqliteDedupStore({ path }) from '@email-webhooks/core/sqlite'.`
}

function checkStore(store: unknown, logger: WebhookLogger | undefined): DedupStore {
  // No store given: the runtime's default, opened now so that a broken default fails here, loudly.
  if (store === undefined) return getDefaultStore(DedupStoreError, () => new MemoryDedupStore(), logger)
  if (store === 'memory') return new MemoryDedupStore()
  const candidate = store as Partial<DedupStore> | null
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.claim !== 'function' ||
    typeof candidate.complete !== 'function' ||
    typeof candidate.release !== 'function'
  ) {
    throw new TypeError(
      `${PACKAGE} store must implement claim, complete and release (see DedupStore), or be 'memory' to opt into the non-durable in-process store.${stringStoreHint(store)}`,
    )
  }
  return candidate as DedupStore
}

function checkLogger(logger: unknown): WebhookLogger | undefined {
  if (logger === false) return undefined
  if (logger === undefined) return console
  const candidate = logger as Partial<WebhookLogger> | null
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.error !== 'function' ||
    typeof candidate.warn !== 'function'
  ) {
    throw new TypeError(`${PACKAGE} logger must have error(message) and warn(message) methods (like console), or be false.`)
  }
  return candidate as WebhookLogger
}

/** Every option `createReceiver` knows (adapters add theirs to none: they pass these through). */
const KNOWN_OPTIONS = [
  'secret',
  'handlers',
  'onEvent',
  'onUnknown',
  'onError',
  'logger',
  'store',
  'namespace',
  'toleranceSeconds',
  'maxBodyBytes',
  'leaseMs',
  'retentionMs',
  'handlerTimeoutMs',
  'storeTimeoutMs',
  'now',
  'ordering',
  'orderKey',
  'skipStale',
  'onStale',
  'mode',
  'inbox',
  'telemetry',
] as const

/**
 * Refuses an option name this version does not know (a typo, or an option of a newer version),
 * naming the nearest known one: an unknown option would otherwise be accepted and do nothing.
 * @throws {TypeError} naming the unknown option and the nearest known one.
 */
export function checkOptionNames(options: object): void {
  for (const name of Object.keys(options)) {
    if ((KNOWN_OPTIONS as readonly string[]).includes(name)) continue
    const hint = didYouMean(name, KNOWN_OPTIONS)
    throw new TypeError(
      `${PACKAGE} unknown option "${name}": it would be ignored.${hint} The options are ${KNOWN_OPTIONS.filter((known) => known !== 'secret' && known !== 'handlers').join(', ')} (an option of a newer version of @email-webhooks/core needs that version).`,
    )
  }
}

/**
 * Checks every option and fills in the defaults; opens the default store when none is given.
 * @throws {TypeError} naming the first invalid option.
 * @throws {DedupStoreError} when the default SQLite store cannot be opened on Node.
 */
export function resolveOptions<Ctx>(options: ReceiverOptions<Ctx>): ResolvedOptions<Ctx> {
  checkOptionNames(options)
  const handlers = checkHandlers(options)
  const namespace = options.namespace ?? DEFAULT_NAMESPACE
  if (typeof namespace !== 'string' || namespace.length === 0) throw new TypeError(`${PACKAGE} namespace must be a non-empty string.`)
  const maxBodyBytes = wholePositive('maxBodyBytes', options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES, 'bytes')
  const leaseMs = wholePositive('leaseMs', options.leaseMs, DEFAULT_LEASE_MS, 'milliseconds')
  const retentionMs = wholePositive('retentionMs', options.retentionMs, DEFAULT_RETENTION_MS, 'milliseconds')
  const storeTimeoutMs = wholePositive('storeTimeoutMs', options.storeTimeoutMs, DEFAULT_STORE_TIMEOUT_MS, 'milliseconds')
  const handlerTimeoutMs = wholePositive(
    'handlerTimeoutMs',
    options.handlerTimeoutMs,
    // A short lease (tests, fast failover) keeps the handler well inside it.
    Math.min(DEFAULT_HANDLER_TIMEOUT_MS, Math.floor(leaseMs * 0.8)) || 1,
    'milliseconds',
  )
  if (handlerTimeoutMs >= leaseMs) {
    throw new TypeError(
      `${PACKAGE} handlerTimeoutMs (${handlerTimeoutMs}) must be below leaseMs (${leaseMs}), so a handler stops before another worker may take the event over.`,
    )
  }
  const logger = checkLogger(options.logger)
  const store = checkStore(options.store, logger)
  const orderInputOptions: OrderInputOptions = options.orderKey ? { orderKey: options.orderKey } : {}
  const ordering = orderingMode(options, store, PACKAGE)
  if (ordering === 'store_without_ordering') {
    logger?.warn(
      `${PACKAGE} ordering: true, but this store (${storeName(store)}) keeps no order marks (it does not declare ordering: true; a Redis Cluster client cannot), so every ctx.order is unknown (store_without_ordering) and events of one email are not kept apart across instances. Use a store with the ordering capability for ordering.`,
    )
  }
  return {
    handlers,
    onEvent: options.onEvent,
    onUnknown: options.onUnknown,
    namespace,
    maxBodyBytes,
    leaseMs,
    retentionMs,
    handlerTimeoutMs,
    storeTimeoutMs,
    store,
    logger,
    ordering,
    inbox: resolveInbox(options, store, PACKAGE),
    orderInputOptions,
    skipStale: skipStaleTest(options.skipStale, PACKAGE),
    onStale: options.onStale,
    otel: telemetryOf(options.telemetry),
  }
}

function telemetryOf(option: TelemetryOption | undefined): ResolvedOptions<unknown>['otel'] {
  const api = resolveTelemetry(option, PACKAGE)
  return api === undefined ? undefined : { api, option }
}
