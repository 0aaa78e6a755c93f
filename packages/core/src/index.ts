/**
 * @email-webhooks/core: receive the email service's webhooks correctly. Verification,
 * typed events, the receiver pipeline with durable dedup, and the web-standard handler.
 */

export { declaredLength, declaredLengthExceeds } from './body.js'
export { cryptoBackendName } from './crypto-info.js'
export {
  InboxItemError,
  type InboxItemErrorCode,
  WebhookHandlingError,
  type WebhookHandlingErrorCode,
  WebhookVerificationError,
  type WebhookVerificationErrorCode,
} from './errors.js'
export {
  EMAIL_EVENT_TYPES,
  type EmailEvent,
  type EmailEventData,
  type EmailEventOf,
  type EmailEventType,
  isEmailEvent,
  isEmailEventType,
  parseEnvelope,
  type WebhookEvent,
} from './events.js'
export { emailWebhook, type FetchHandlerContext, type FetchWebhookHandler, readBodyWithLimit, toResponse } from './fetch.js'
export { HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP, type WebhookHeaders } from './headers.js'
export { ClientAbortedError, type NodeBodyStream, readNodeBody } from './node-body.js'
export {
  type ClaimOrder,
  type CreatedAtProblem,
  compareEventIds,
  compareOrderPositions,
  EMAIL_MESSAGE_STATUSES,
  EMAIL_ORDER_KEY_PREFIX,
  type EmailFold,
  type EmailMessageStatus,
  type EmailState,
  type EventOrder,
  type FoldEmailEventsOptions,
  type FoldedEvent,
  foldEmailEvents,
  type IgnoredEvent,
  type IgnoredReason,
  isOrderMark,
  isReplacedBy,
  isStaleSkippableType,
  MAX_ORDER_KEY_LENGTH,
  type OrderInput,
  type OrderInputOptions,
  type OrderingClaimOptions,
  type OrderingClaimResult,
  type OrderingCompleteOptions,
  type OrderingDedupStore,
  type OrderKeyFunction,
  type OrderMark,
  type OrderPosition,
  type OrderStatus,
  type OrderUnknownReason,
  orderFromClaim,
  orderInputOf,
  orderStatusOf,
  type ParsedCreatedAt,
  parseCreatedAt,
  type RecipientState,
  type RecipientStatus,
  STALE_SKIPPABLE_TYPES,
  type StaleSkippableType,
  type StoreOrderInput,
  supportsOrdering,
  TERMINAL_MESSAGE_STATUSES,
  unknownOrder,
} from './ordering/index.js'
export {
  bodyTooLargeError,
  type CheckedEmailEventHandlers,
  createInboxProcessor,
  createInboxWorker,
  createReceiver,
  DEFAULT_HANDLER_TIMEOUT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_NAMESPACE,
  DEFAULT_RETENTION_MS,
  DEFAULT_STORE_TIMEOUT_MS,
  type EmailEventHandler,
  type EmailEventHandlers,
  type ErrorInfo,
  type EventSource,
  type HandlerContext,
  type InboxDeadLetter,
  type InboxOptions,
  type InboxProcessor,
  type InboxProcessorOptions,
  type InboxWorkCounts,
  type InboxWorkerHandle,
  type InboxWorkerOptions,
  type InboxWorkerSettings,
  type InboxWorkResult,
  type NearestEmailEventTypes,
  RECONCILE_FIELD,
  type ReceiveInput,
  type ReceiveOutcome,
  type Receiver,
  type ReceiverInbox,
  type ReceiverOptions,
  type ReceiverResponse,
  type ReceiverStats,
  type StaleObserver,
  type UnknownHandlerKey,
  type WebhookEventHandler,
  type WebhookLogger,
  type WebhookOptions,
} from './receiver/index.js'
export { assertValidSecrets, type WebhookSecret } from './secret.js'
export { sendGuard } from './send-guard.js'
export { type SignedWebhook, type SignWebhookInput, signWebhook } from './sign.js'
export { DedupStoreError, type DedupStoreErrorCode } from './store/errors.js'
export type { InboxEntry, InboxItem, InboxLease, InboxQueue, InboxSink, InboxState, InboxStats } from './store/inbox.js'
export { DEFAULT_MEMORY_STORE_MAX_KEYS, MemoryDedupStore, type MemoryDedupStoreOptions } from './store/memory/index.js'
export type {
  Claim,
  ClaimOptions,
  ClaimResult,
  CompleteOptions,
  DedupKeyState,
  DedupStore,
  ExtendOptions,
  FactCounts,
} from './store/types.js'
export {
  DEFAULT_TOLERANCE_SECONDS,
  type VerifiedWebhook,
  type VerifyWebhookInput,
  verifyWebhook,
  type WebhookBody,
} from './verify.js'
