/**
 * The inbox contract: a durable queue of verified events, for the receiver's inbox mode (answer 2xx
 * once the event is recorded, run the handlers after the answer). A store that has one exposes it
 * as `store.inbox`; every built-in store does. The `inboxConformance` suite in
 * `@email-webhooks/core/testing` checks these rules. All times are ms since the epoch on the
 * store's own clock; all durations whole ms.
 */

/** What the receiver records of a verified event. */
export interface InboxItem {
  /** The dedup key (`namespace:webhook-id`): one entry per key while it is remembered. */
  key: string
  /** The event type. */
  type: string
  /** The verified body, exactly as received (UTF-8 text). */
  payload: string
  /** The verified `webhook-timestamp` (seconds), for `ctx.timestamp`. */
  timestamp: number
  /** With ordering: the event's order key (its email); entries of one key are taken oldest first, one at a time. */
  orderKey?: string
  /** With ordering: the event's `created_at` in ms, its place among the entries of its order key. */
  createdAtMs?: number
}

/** Where an entry stands: waiting (maybe for a retry time), held by a worker, handled, or given up. */
export type InboxState = 'pending' | 'running' | 'done' | 'dead'

/** An entry as `list` and `get` show it. */
export interface InboxEntry extends InboxItem {
  state: InboxState
  /** How many times a worker took it (a taken entry whose lease lapsed counts too). */
  attempts: number
  enqueuedAt: number
  /** When a pending entry may be taken next. */
  nextAttemptAt: number
  /** The error of the last failed attempt (its message only, never the payload). */
  lastError: string | null
  /** When it was finished (done) or given up (dead). */
  endedAt: number | null
  /** When its last attempt failed (the time of `lastError`), or null. */
  failedAt: number | null
  /** When `retry` last made it pending again after it was dead, or null: a `lastError` from before then is a failure of before the retry. */
  retriedAt: number | null
  /** Attempts it used before it was retried (all retries together); `attempts` counts from the last retry. */
  attemptsBeforeRetry: number
}

/** A worker's hold on one entry: only its token may finish, fail or defer it. */
export interface InboxLease {
  key: string
  token: string
  /** The entry's attempts, this one included. */
  attempt: number
  item: InboxItem
}

/** The counts `stats()` gives. */
export interface InboxStats {
  pending: number
  running: number
  dead: number
  /** When the oldest pending entry was recorded, or null: its age is the inbox's lag. */
  oldestPendingAt: number | null
}

/**
 * A durable queue of verified events. Rules (checked by `inboxConformance`):
 *
 * 1. `enqueue` is durable before it resolves `'queued'`; an entry with the same key (in any state,
 *    until a done entry's retention ends) makes it `'duplicate'`, changing nothing.
 * 2. `take` leases one pending entry whose time has come, oldest `nextAttemptAt` first, for
 *    `leaseMs`, adding one attempt; concurrent takes never hold the same entry. With `ordered`, an
 *    entry with an order key is taken only when no entry of that key is running and none older by
 *    (`createdAtMs`, key) is pending or running. A running entry whose lease lapsed is pending again.
 * 3. `finish`, `fail`, `defer` and `renew` act only while the lease's token holds the entry: running
 *    with that token, the lease not lapsed (false after, even before another take).
 *    `renew` makes the lease end `leaseMs` from now (the worker's heartbeat while a handler runs);
 *    `finish` makes it done (kept `retentionMs` as a duplicate, then forgotten); `fail` records the
 *    error and makes it pending again after `retryInMs`, or dead when `retryInMs` is null; `defer`
 *    makes it pending again after `retryInMs` and gives its attempt back.
 * 4. `retry` makes dead entries (the given keys, or every one) pending now, attempts from zero
 *    (those it had are added to `attemptsBeforeRetry`, and `retriedAt` is now);
 *    `purge` deletes dead entries that ended before `olderThanMs` ago; neither touches other states.
 *    A store may do `retry('dead')` and `purge` in batches, each committed on its own; one that fails
 *    after a first batch says in its error how many entries it had changed (store/chunked.ts).
 */
export interface InboxQueue {
  enqueue(item: InboxItem, opts: { retentionMs: number }): Promise<'queued' | 'duplicate'>
  take(opts: { leaseMs: number; ordered: boolean }): Promise<InboxLease | undefined>
  finish(lease: InboxLease, opts: { retentionMs: number }): Promise<boolean>
  fail(lease: InboxLease, opts: { error: string; retryInMs: number | null }): Promise<boolean>
  defer(lease: InboxLease, opts: { retryInMs: number }): Promise<boolean>
  renew(lease: InboxLease, opts: { leaseMs: number }): Promise<boolean>
  list(opts?: { state?: InboxState; limit?: number }): Promise<InboxEntry[]>
  get(key: string): Promise<InboxEntry | undefined>
  retry(keys: string[] | 'dead'): Promise<number>
  purge(opts: { olderThanMs: number }): Promise<number>
  stats(): Promise<InboxStats>
}

/** Where an inbox-mode receiver hands a verified event when it does not keep the queue itself (BullMQ, pg-boss). */
export interface InboxSink {
  /** Durable (accepted by the queue) before it resolves; `'duplicate'` when the event id is already there. */
  enqueue(item: InboxItem, opts: { retentionMs: number }): Promise<'queued' | 'duplicate'>
}
