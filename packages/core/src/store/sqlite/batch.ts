/**
 * One group-commit batch of `SqliteDedupStore`, run inside its `BEGIN IMMEDIATE` transaction: each
 * claim reads the done record and takes the lease (with the order key's lock, and the order mark,
 * when asked); each complete ends its lease, writes the done record, advances the order mark and
 * frees the order key (order.ts).
 */
import type { ClaimOrder, ClaimResult, FactCounts, StoreOrderInput } from '../types.js'
import type { Generations } from './generations.js'
import { advanceMark, readFact, readMark } from './order.js'
import type { Statements } from './types.js'

/** The one `duplicate` result (compared by identity). */
export const DUPLICATE: ClaimResult = Object.freeze({ status: 'duplicate' })

/** A caller waiting for the batch. */
export interface Pending<T> {
  resolve: (value: T) => void
  reject: (error: unknown) => void
}
/** A claim waiting for the batch; `result` is filled in by it. */
export interface PendingClaim extends Pending<ClaimResult> {
  key: string
  leaseMs: number
  order: StoreOrderInput | undefined
  result: ClaimResult | undefined
}
/** A complete waiting for the batch; `done` is filled in by it. */
export interface PendingComplete extends Pending<boolean> {
  key: string
  token: string
  retentionMs: number
  order: StoreOrderInput | undefined
  /** The order key the claim holds (freed with the complete). */
  orderKey: string | undefined
  factChange: FactCounts | undefined
  done: boolean
}

/**
 * A write of the inbox's run in the batch's transaction (its own savepoint: a failure undoes only
 * it); `outcome` is filled in by the batch.
 */
export interface PendingWrite extends Pending<unknown> {
  write: () => unknown
  /** Answered only once the commit is on disk (an enqueue, whose 2xx relies on it). */
  durable: boolean
  outcome: { ok: true; value: unknown } | { ok: false; error: unknown } | undefined
}

/**
 * Runs each write of the batch (call inside its transaction); fills in `outcome`. A write whose
 * error ended the whole transaction (SQLite rolls it back on SQLITE_FULL, an I/O error, out of
 * memory) is thrown on: the batch fails as one, rather than the next writes committing each alone.
 */
export function runWrites(db: { readonly inTransaction: boolean }, writes: PendingWrite[]): void {
  for (const item of writes) {
    try {
      item.outcome = { ok: true, value: item.write() }
    } catch (error) {
      if (!db.inTransaction) throw error
      item.outcome = { ok: false, error }
    }
  }
}

/** Takes the key's lease (a new one, or a lapsed or released one over): its attempt, or undefined while another holds it. */
function takeLease(sql: Statements, key: string, token: string, expiresAt: number, now: number): number | undefined {
  if (sql.newLease.run(key, token, expiresAt).changes === 1) return 1
  if (sql.retakeLease.run(token, expiresAt, key, now).changes === 0) return undefined
  return sql.findAttempt.get(key) as number
}

/**
 * One claim inside the batch's transaction: duplicate, the live lease that holds the key, another
 * event's claim that holds the order key, or a new lease (holding the order key, with the mark).
 */
function claimInBatch(
  sql: Statements,
  generations: Generations | undefined,
  { key, leaseMs, order }: PendingClaim,
  now: number,
): ClaimResult {
  const { findDone, findLease, marks } = sql
  const done = findDone.get(key) as number | undefined
  if ((done !== undefined && done > now) || generations?.isDone(key, now)) return DUPLICATE
  if (order) {
    const locked = marks.findLock.get(order.key) as number | undefined
    if (locked !== undefined && locked > now) {
      const own = sql.findHeldLease.get(key) as number | undefined
      // This event's own live lease holds the order key too: it is in flight itself.
      if (own !== undefined && own > now) return { status: 'in_flight', retryAfterMs: Math.max(1, own - now) }
      return { status: 'in_flight', retryAfterMs: Math.max(1, locked - now), reason: 'order' }
    }
  }
  const token = crypto.randomUUID()
  const attempt = takeLease(sql, key, token, now + leaseMs, now)
  if (attempt !== undefined) {
    if (!order) return { status: 'acquired', claim: { key, token, attempt } }
    marks.takeLock.run(order.key, token, now + leaseMs)
    const claim = { key, token, attempt, orderKey: order.key }
    const found: ClaimOrder = { mark: readMark(marks, order.key, now) }
    if (order.fact !== undefined) found.fact = readFact(marks, `${order.key}|${order.fact}`, now)
    return { status: 'acquired', claim, order: found }
  }
  // The write lock is held until the batch commits: the lease that stopped the upsert is live at `now`.
  const expiresAt = findLease.get(key) as number
  return { status: 'in_flight', retryAfterMs: Math.max(1, expiresAt - now) }
}

/**
 * Runs every claim, then every complete, of one batch (call inside its transaction, after the
 * generations' `sync`); fills in `result` and `done`. Returns the done records written.
 */
export function commitBatch(
  sql: Statements,
  generations: Generations | undefined,
  claims: PendingClaim[],
  completes: PendingComplete[],
  now: number,
): number {
  for (const item of claims) item.result = claimInBatch(sql, generations, item, now)
  const { endLease, markDone, marks } = sql
  let written = 0
  for (const item of completes) {
    item.done = endLease.run(item.key, item.token).changes === 1
    if (!item.done) continue
    markDone.run(item.key, now + item.retentionMs)
    written++
    const { order, factChange } = item
    if (order) advanceMark(marks, order, now + item.retentionMs, now)
    if (order?.fact !== undefined && factChange) {
      const { handled, reconciled } = factChange
      marks.changeFact.run({ key: `${order.key}|${order.fact}`, handled, reconciled, expires: now + item.retentionMs, now })
    }
    if (item.orderKey !== undefined) marks.freeLock.run(item.orderKey, item.token)
  }
  return written
}
