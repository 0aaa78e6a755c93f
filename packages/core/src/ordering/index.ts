/** The ordering model (positions, order keys, `ctx.order`, the store capability) and the email state fold. */
export {
  type ClaimOrder,
  type OrderingClaimOptions,
  type OrderingClaimResult,
  type OrderingCompleteOptions,
  type OrderingDedupStore,
  type StoreOrderInput,
  supportsOrdering,
} from './contract.js'
export {
  EMAIL_MESSAGE_STATUSES,
  type EmailFold,
  type EmailMessageStatus,
  type EmailState,
  type FoldedEvent,
  type IgnoredEvent,
  type IgnoredReason,
  type RecipientState,
  type RecipientStatus,
  TERMINAL_MESSAGE_STATUSES,
} from './email-state.js'
export { type FoldEmailEventsOptions, foldEmailEvents } from './fold.js'
export {
  EMAIL_ORDER_KEY_PREFIX,
  MAX_ORDER_KEY_LENGTH,
  type OrderInput,
  type OrderInputOptions,
  type OrderKeyFunction,
  type OrderUnknownReason,
  orderInputOf,
} from './key.js'
export {
  type CreatedAtProblem,
  compareEventIds,
  compareOrderPositions,
  type OrderMark,
  type OrderPosition,
  type ParsedCreatedAt,
  parseCreatedAt,
} from './position.js'
export { isReplacedBy, isStaleSkippableType, STALE_SKIPPABLE_TYPES, type StaleSkippableType } from './skip.js'
export { type EventOrder, isOrderMark, type OrderStatus, orderFromClaim, orderStatusOf, unknownOrder } from './status.js'
