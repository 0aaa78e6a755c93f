/**
 * The ordering capability of a dedup store: the optional part of the `DedupStore` contract
 * (store/types.ts holds its options and results). A store that has it returns the current
 * high-water mark of an order key with an `acquired` claim, and advances the mark atomically with
 * `complete`, only when the completed event is newer. A store without it still works: ordering is
 * then `unknown`.
 */
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupStore } from '../store/types.js'

export type { ClaimOrder, StoreOrderInput } from '../store/types.js'

/** Claim options of an ordering store (the `order` option is part of `ClaimOptions`). */
export type OrderingClaimOptions = ClaimOptions
/** Complete options of an ordering store (the `order` option is part of `CompleteOptions`). */
export type OrderingCompleteOptions = CompleteOptions
/** Claim result of an ordering store: an `acquired` result made with `order` carries `order`. */
export type OrderingClaimResult = ClaimResult

/**
 * A dedup store with the ordering capability. Rules (checked by `orderingConformance` from
 * `@email-webhooks/core/testing`):
 *
 * 1. `ordering` is `true`.
 * 2. `claim(key, { order })` that is `acquired` returns `order: { mark }`: the mark of `order.key`
 *    as left by every `complete` that resolved before the claim started (`null` when none, or when
 *    it expired). `duplicate` and `in_flight` results carry no `order`. A claim never changes a mark.
 * 3. `complete(claim, { order })`, in ONE atomic step with marking the dedup key done: if the token
 *    still owns the key, the mark of `order.key` becomes `order.mark` when there is no live mark or
 *    `order.mark` is newer by `compareOrderPositions` (created_at ms, then event id in byte order);
 *    otherwise the mark keeps its position and type. Either way its expiry becomes now + `retentionMs`.
 *    If the token no longer owns the key, `complete` returns `false` and no mark changes.
 * 4. `release`, a lapsed lease or a crash between claim and complete leave every mark unchanged.
 * 5. Concurrent completes for one mark key leave the newest position as the mark, whatever their
 *    interleaving (compare-and-set inside the store, never read in the client and write back).
 * 6. Marks live apart from dedup keys (a mark key never answers `duplicate`), and expire on the
 *    store's own clock like dedup records.
 * 7. One event per mark key at a time: an `acquired` claim made with `order` holds `order.key`
 *    (it sets `claim.orderKey`) until its `complete`, its `release`, or the end of its lease. A
 *    claim of another event with the same `order.key` meanwhile answers
 *    `{ status: 'in_flight', reason: 'order', retryAfterMs }` (the holder's lease left), after the
 *    `duplicate` and `in_flight` checks of its own key; taking the key and the lease is one atomic
 *    step. So two events of one email never run at once, and the second sees the first's mark.
 */
export interface OrderingDedupStore extends DedupStore {
  /** Declares the capability. */
  readonly ordering: true
  claim(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult>
  complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean>
}

/**
 * True when the store declares the ordering capability (`ordering === true`).
 *
 * @param store Any dedup store.
 * @example
 * const order = supportsOrdering(store) ? { key: `${namespace}:${input.key}` } : undefined
 */
export function supportsOrdering(store: DedupStore): store is OrderingDedupStore {
  return (store as { ordering?: unknown }).ordering === true
}
