/**
 * One group-commit batch of `SqliteDedupStore`, run inside its `BEGIN IMMEDIATE` transaction: each
 * claim reads the done record and takes the lease (and reads the order mark when asked); each
 * complete ends its lease, writes the done record and advances the order mark (order.ts).
 */
import type { ClaimResult, StoreOrderInput } from '../types.js'
import { advanceMark, readMark } from './order.js'
import type { Statements } from './schema.js'

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
  done: boolean
}

/** One claim inside the batch's transaction: duplicate, a new lease (with the mark when asked), or the live lease that holds the key. */
function claimInBatch(sql: Statements, { key, leaseMs, order }: PendingClaim, now: number): ClaimResult {
  const { findDone, takeLease, findLease } = sql
  const done = findDone.get(key) as number | undefined
  if (done !== undefined && done > now) return DUPLICATE
  const token = crypto.randomUUID()
  const [attempt] = takeLease.all(key, token, now + leaseMs, now) as number[]
  if (attempt !== undefined) {
    const claim = { key, token, attempt }
    return order ? { status: 'acquired', claim, order: { mark: readMark(sql.marks, order.key, now) } } : { status: 'acquired', claim }
  }
  // The write lock is held until the batch commits: the lease that stopped the upsert is live at `now`.
  const expiresAt = findLease.get(key) as number
  return { status: 'in_flight', retryAfterMs: Math.max(1, expiresAt - now) }
}

/** Runs every claim, then every complete, of one batch (call inside its transaction); fills in `result` and `done`. */
export function commitBatch(sql: Statements, claims: PendingClaim[], completes: PendingComplete[], now: number): void {
  for (const item of claims) item.result = claimInBatch(sql, item, now)
  const { endLease, markDone, marks } = sql
  for (const item of completes) {
    item.done = endLease.run(item.key, item.token).changes === 1
    if (!item.done) continue
    markDone.run(item.key, now + item.retentionMs)
    if (item.order) advanceMark(marks, item.order, now + item.retentionMs, now)
  }
}
