/**
 * The dedup store contract (DESIGN.md), with its optional ordering capability. Every store,
 * built-in or custom, implements it; the conformance suites in `@email-webhooks/core/testing`
 * check it. All durations are in milliseconds and every expiry is computed on the store's own clock.
 */
import type { OrderMark } from '../ordering/position.js'
import type { InboxQueue } from './inbox.js'

/** Proof of ownership of one key, returned by an `acquired` claim. */
export interface Claim {
  key: string
  /** Fencing token: `complete` and `release` act only while it still owns the key. */
  token: string
  /** 1 for the first claim of the key, +1 for each re-claim after a lease expired or a release. */
  attempt: number
  /**
   * Ordering stores: the mark key (`order.key`) this claim holds. While it holds it, no other
   * event with that mark key is acquired (one event of an email at a time); `complete` and
   * `release` free it, and it lapses with the lease.
   */
  orderKey?: string
}

/**
 * The `order` option of `claim` and `complete` (ordering capability): which high-water mark, and
 * the event's own position. The receiver builds it once per event and passes it to both calls.
 */
export interface StoreOrderInput {
  /** The mark key: the receiver's `namespace` + `:` + the event's order key (at most `MAX_ORDER_KEY_LENGTH` characters more than the namespace). */
  key: string
  /** The event's position and type: what the mark becomes when this event completes and is the newest. */
  mark: OrderMark
  /**
   * Facts (ordering stores that keep them): the event's fact within the mark key, `<type>|<created_at ms>`.
   * A claim returns its counts (`ClaimOrder.fact`); a complete with `factChange` changes them.
   */
  fact?: string
}

/**
 * How many events of one fact (one email, type and `created_at` millisecond) were handled, and how
 * many of those were brought by reconcile and not yet matched by the sender's own delivery.
 */
export interface FactCounts {
  handled: number
  reconciled: number
}

/** What an ordering store adds to an `acquired` claim made with an `order` option. */
export interface ClaimOrder {
  /** The newest completed event for the key, or `null` when none is remembered (never completed, or expired). */
  mark: OrderMark | null
  /**
   * The counts of `order.fact` (zeros when none is remembered), from a store that keeps facts;
   * absent from one that does not.
   */
  fact?: FactCounts
  /**
   * `true` when `mark` is `null` but a mark for this key may have been forgotten before its
   * retention ended (a full `MemoryDedupStore` evicts marks): the event's order is then `unknown`,
   * never a guessed `first`.
   */
  forgotten?: boolean
}

/**
 * Result of {@link DedupStore.claim}. A store with the ordering capability adds `order` to an
 * `acquired` result of a claim made with the `order` option; other stores leave it out.
 */
export type ClaimResult =
  | { status: 'acquired'; claim: Claim; order?: ClaimOrder }
  | { status: 'duplicate' }
  | {
      status: 'in_flight'
      retryAfterMs: number
      /**
       * `'order'` (ordering stores): the event itself is free, but another event with the same
       * mark key (of the same email) holds it; `retryAfterMs` is that claim's lease left.
       */
      reason?: 'order'
    }

/**
 * What a store knows of one key, from {@link DedupStore.lookup}: `'done'` (handled and still
 * remembered), `'in_flight'` (claimed under a live lease), `'absent'` (never seen, released, or
 * expired).
 */
export type DedupKeyState = 'done' | 'in_flight' | 'absent'

/** Options of {@link DedupStore.claim}. */
export interface ClaimOptions {
  /** How long the claim holds before another worker may take the key over. */
  leaseMs: number
  /** How long a completed key is remembered (passed again to `complete`). */
  retentionMs: number
  /**
   * Ordering capability only (a store without it ignores this): the acquired result carries
   * `order.mark` for `order.key`, and the claim holds `order.key` (`Claim.orderKey`) until it
   * completes, is released or its lease ends; while another claim holds it, the answer is
   * `in_flight` with `reason: 'order'`. A claim never changes a mark.
   */
  order?: StoreOrderInput
}

/** Options of {@link DedupStore.extend}. */
export interface ExtendOptions {
  /** The lease's new length, from now. */
  leaseMs: number
}

/** Options of {@link DedupStore.complete}. */
export interface CompleteOptions {
  /** How long the completed key is remembered as a duplicate. */
  retentionMs: number
  /**
   * Ordering capability only (a store without it ignores this): the mark of `order.key` advances
   * to `order.mark` if that is newer, in the same atomic step as the complete.
   */
  order?: StoreOrderInput
  /**
   * With `order.fact`: added to the fact's counts in the same atomic step (`reconciled` never goes
   * below 0), and the fact's expiry becomes now + `retentionMs`.
   */
  factChange?: FactCounts
}

/**
 * Durable memory of which events were handled. `claim` is one atomic step: of any number of
 * concurrent claims of a key, at most one is `acquired`.
 */
export interface DedupStore {
  /**
   * `true` declares the optional ordering capability (see `OrderingDedupStore`, checked by
   * `orderingConformance`). Without it the store still works; ordering is then reported `unknown`.
   * A store whose capability depends on its database (PostgreSQL's mark tables) says `false`
   * once it finds it cannot keep marks, and `true` again once it can.
   */
  readonly ordering?: boolean
  /**
   * Why the store cannot keep order marks right now (e.g. a missing mark table), or undefined.
   * The receiver logs it once when an ordered claim comes back without a mark.
   */
  readonly orderingIssue?: string | undefined
  /** Atomically takes the key if it is new, released, or its lease or retention expired. */
  claim(key: string, opts: ClaimOptions): Promise<ClaimResult>
  /**
   * Marks the claim's key done; durable before the promise resolves. False if the token no longer
   * owns the key (another claim took it over, or it is done). A store whose leases do not survive
   * its own restart (Redis) records a key it no longer has at all: nobody else claimed it since.
   */
  complete(claim: Claim, opts: CompleteOptions): Promise<boolean>
  /**
   * Optional: whether `claim` itself recorded its key done (its `complete` landed, whether or not
   * its answer came back). A `complete` that answers false after an earlier try of the same claim
   * timed out is then told apart from one whose lease another claim took over, long after the
   * lease (the receiver asks within the record's retention and the hour it keeps trying). Without
   * it the receiver can tell only within the claim's lease, by `lookup`. PostgreSQL: the done row
   * keeps the claim's attempt number.
   */
  completedBy?(claim: Claim): Promise<boolean>
  /** Gives the key up so it can be claimed again at once. False if the token no longer owns the key. */
  release(claim: Claim): Promise<boolean>
  /**
   * Optional: renews a live lease. While `claim.token` holds `claim.key` (claimed, not completed,
   * released nor lapsed), the lease, and the order key the claim holds (`claim.orderKey`), now end
   * `leaseMs` from now on the store's clock, and it resolves true; otherwise false, changing
   * nothing. The inbox worker and `createInboxProcessor` call it while a handler runs (a heartbeat),
   * so their leases can be short: a dead worker's event is taken again after one short lease, a
   * live worker's never. Without it they hold one long lease (the handler's deadline and a minute).
   */
  extend?(claim: Claim, opts: ExtendOptions): Promise<boolean>
  /**
   * Optional read without side effects: what the store knows of `key` now. Recovery tooling uses it
   * to skip events already handled; a store without it still works (everything is retried and the
   * receiver deduplicates).
   */
  lookup?(key: string): Promise<DedupKeyState>
  /**
   * Optional: the store's inbox, a durable queue of verified events for the receiver's inbox mode
   * (answer once recorded, handle after the answer). The memory, SQLite, PostgreSQL and Redis stores
   * have one; the serverless stores (DynamoDB, Deno KV, Cloudflare) do not (use `inbox.sink` there).
   */
  readonly inbox?: InboxQueue
  /** Frees connections and timers. */
  close?(): Promise<void>
}
