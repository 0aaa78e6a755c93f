/**
 * The dedup store contract (DESIGN.md). Every store, built-in or custom, implements it; the
 * conformance suite in `@email-webhooks/core/testing` checks it. All durations are in
 * milliseconds and every expiry is computed on the store's own clock.
 */

/** Proof of ownership of one key, returned by an `acquired` claim. */
export interface Claim {
  key: string
  /** Fencing token: `complete` and `release` act only while it still owns the key. */
  token: string
  /** 1 for the first claim of the key, +1 for each re-claim after a lease expired or a release. */
  attempt: number
}

/** Result of {@link DedupStore.claim}. */
export type ClaimResult = { status: 'acquired'; claim: Claim } | { status: 'duplicate' } | { status: 'in_flight'; retryAfterMs: number }

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
}

/** Options of {@link DedupStore.complete}. */
export interface CompleteOptions {
  /** How long the completed key is remembered as a duplicate. */
  retentionMs: number
}

/**
 * Durable memory of which events were handled. `claim` is one atomic step: of any number of
 * concurrent claims of a key, at most one is `acquired`.
 */
export interface DedupStore {
  /** Atomically takes the key if it is new, released, or its lease or retention expired. */
  claim(key: string, opts: ClaimOptions): Promise<ClaimResult>
  /** Marks the claim's key done; durable before the promise resolves. False if the token no longer owns the key. */
  complete(claim: Claim, opts: CompleteOptions): Promise<boolean>
  /** Gives the key up so it can be claimed again at once. False if the token no longer owns the key. */
  release(claim: Claim): Promise<boolean>
  /**
   * Optional read without side effects: what the store knows of `key` now. Recovery tooling uses it
   * to skip events already handled; a store without it still works (everything is retried and the
   * receiver deduplicates).
   */
  lookup?(key: string): Promise<DedupKeyState>
  /** Frees connections and timers. */
  close?(): Promise<void>
}
