/**
 * Every name the receiver's telemetry uses, in one place (documented as one table on the docs'
 * Observability page): OpenTelemetry semantic conventions where they exist (HTTP server, messaging), our own
 * under `email_webhooks.*`. `stats()` counts deliveries under the same outcome names.
 */

/** The instrumentation scope: tracer and meter name. */
export const SCOPE = '@email-webhooks/core'
/** This package's version, the scope version (a test keeps it equal to package.json's). */
export const SCOPE_VERSION = '0.1.0'

export const SPAN_RECEIVE = 'email-webhooks receive'
export const SPAN_PROCESS = 'email-webhooks process'
export const SPAN_VERIFY = 'email-webhooks verify'
export const SPAN_HANDLER = 'email-webhooks handler'
/** Store steps: `email-webhooks claim`, `… complete`, `… release`, `… enqueue`. */
export const spanOfStep = (step: StoreStep): string => `email-webhooks ${step}`

export type StoreStep = 'claim' | 'complete' | 'release' | 'enqueue'

/**
 * What happened to a delivery, as the `email_webhooks.outcome` attribute and `stats().deliveries`:
 * `handled` (2xx once its handlers ran, or it had none, and it was recorded), `queued` (inbox mode:
 * 2xx once in the inbox), `duplicate`, `skipped` (skipStale), `ignored` (2xx without handling: a
 * type this version does not know, reason `unknown_type`, onUnknown having run if given; or a signed
 * body that is no envelope, reason `invalid_envelope`), `rejected` (401/413: refused before any
 * handler), `in_flight` (409: held by another request, or its email busy), `failed` (5xx).
 */
export type DeliveryOutcome = 'handled' | 'queued' | 'duplicate' | 'skipped' | 'ignored' | 'rejected' | 'in_flight' | 'failed'

export const ATTR = {
  outcome: 'email_webhooks.outcome',
  reason: 'email_webhooks.reason',
  eventType: 'email_webhooks.event.type',
  eventId: 'email_webhooks.event.id',
  attempt: 'email_webhooks.attempt',
  orderStatus: 'email_webhooks.order.status',
  store: 'email_webhooks.store',
  step: 'email_webhooks.store.step',
  mode: 'email_webhooks.mode',
  handlerResult: 'email_webhooks.handler.result',
  source: 'email_webhooks.source',
  inboxAttempt: 'email_webhooks.inbox.attempt',
  linkSource: 'email_webhooks.link.source',
  // Semantic conventions.
  httpStatus: 'http.response.status_code',
  httpMethod: 'http.request.method',
  errorType: 'error.type',
  messagingSystem: 'messaging.system',
  messagingOperation: 'messaging.operation.type',
  messagingId: 'messaging.message.id',
} as const

export const METRIC = {
  deliveries: 'email_webhooks.deliveries',
  handlerDuration: 'email_webhooks.handler.duration',
  storeDuration: 'email_webhooks.store.duration',
  handlersActive: 'email_webhooks.handlers.active',
  inboxProcessed: 'email_webhooks.inbox.processed',
  inboxDepth: 'email_webhooks.inbox.depth',
  inboxRunning: 'email_webhooks.inbox.running',
  inboxLag: 'email_webhooks.inbox.lag',
  inboxDead: 'email_webhooks.inbox.dead',
} as const
