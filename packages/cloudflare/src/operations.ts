/**
 * The store's operations as statement lists run in one transaction (sql.ts), and how their rows
 * read as the contract's answers. D1 runs a list with `batch()`; a Durable Object with
 * `transactionSync`. Both stores share this, so they answer alike.
 */
import type { ClaimOrder, ClaimResult, CompleteOptions, DedupKeyState, OrderMark } from '@email-webhooks/core'
import { type DedupSql, type Statement, statement } from './sql.js'

/** The rows each statement of a list returned, in order. */
export type Rows = Record<string, unknown>[][]

/** A list of statements for one transaction, and how to read its rows. */
export interface Operation<T> {
  statements: Statement[]
  read(rows: Rows): T
}

/** A claim as the stores pass it around: the contract's options with the caller's token and clock. */
export interface ClaimInput {
  key: string
  token: string
  now: number
  leaseMs: number
  /** The order key and fact key, when the store keeps order marks. */
  order?: { key: string; fact?: string } | undefined
  /** Add the purge statements to this claim's transaction. */
  purge: boolean
}

const num = (value: unknown): number => Number(value)

/** What the row of a key says at `now`: done, a live lease (with the ms left), or free. */
function holderState(row: Record<string, unknown> | undefined, now: number): DedupKeyState | { leftMs: number } {
  if (row === undefined || row.expires_at === null || row.expires_at === undefined || num(row.expires_at) <= now) return 'absent'
  if (num(row.done) === 1) return 'done'
  if (row.token === null || row.token === undefined) return 'absent'
  return { leftMs: num(row.expires_at) - now }
}

/** The claim: takes the key (and, ordered, its order key first) and reads who holds it otherwise. */
export function claimOperation(sql: DedupSql, input: ClaimInput): Operation<ClaimResult> {
  const { key, token, now, leaseMs, order } = input
  const values = {
    key,
    token,
    now,
    lease: leaseMs,
    okey: order?.key ?? '',
    fkey: order?.fact === undefined ? '' : `${order.key}|${order.fact}`,
  }
  const purge = input.purge ? sql.purge.map((text) => statement(text, { now })) : []
  if (order === undefined) {
    return {
      statements: [statement(sql.claim, values), statement(sql.holder, values), ...purge],
      read(rows) {
        const won = rows[0]?.[0]
        if (won !== undefined) return { status: 'acquired', claim: { key, token, attempt: num(won.attempt) } }
        return notAcquired(rows[1]?.[0], now)
      },
    }
  }
  return {
    statements: [statement(sql.orderLock, values), statement(sql.orderClaim, values), statement(sql.orderRead, values), ...purge],
    read(rows) {
      const won = rows[1]?.[0]
      const row = rows[2]?.[0] ?? {}
      if (won !== undefined) {
        const mark: OrderMark | null =
          row.created_at_ms === null || row.created_at_ms === undefined
            ? null
            : { createdAtMs: num(row.created_at_ms), eventId: String(row.event_id), type: String(row.type) }
        const found: ClaimOrder = { mark }
        if (order.fact !== undefined) found.fact = { handled: num(row.handled ?? 0), reconciled: num(row.reconciled ?? 0) }
        return { status: 'acquired', claim: { key, token, attempt: num(won.attempt), orderKey: order.key }, order: found }
      }
      const itself = holderState(rows[2]?.[0], now)
      if (itself === 'done') return { status: 'duplicate' }
      if (typeof itself === 'object') return { status: 'in_flight', retryAfterMs: Math.max(1, itself.leftMs) }
      // The event is free: another claim holds its order key (its email).
      const lockLeft = num(row.lock_expires_at ?? now) - now
      return { status: 'in_flight', retryAfterMs: Math.max(1, lockLeft), reason: 'order' }
    },
  }
}

/** duplicate, or in_flight with the holder's time left (1 ms when the row says the key is free). */
function notAcquired(row: Record<string, unknown> | undefined, now: number): ClaimResult {
  const state = holderState(row, now)
  if (state === 'done') return { status: 'duplicate' }
  return { status: 'in_flight', retryAfterMs: typeof state === 'object' ? Math.max(1, state.leftMs) : 1 }
}

/** The complete: done while the token holds the key; with `order`, the mark, the fact and the lock in the same transaction. */
export function completeOperation(
  sql: DedupSql,
  claim: { key: string; token: string },
  opts: Pick<CompleteOptions, 'retentionMs' | 'factChange'> & { order?: CompleteOptions['order'] | undefined },
  now: number,
): Operation<boolean> {
  const done = `done:${crypto.randomUUID()}`
  const base = { key: claim.key, token: claim.token, now, retention: opts.retentionMs, done }
  const statements = [statement(sql.complete, base)]
  const { order } = opts
  if (order !== undefined) {
    const { mark } = order
    statements.push(statement(sql.advanceMark, { ...base, okey: order.key, ms: mark.createdAtMs, id: mark.eventId, type: mark.type }))
    if (order.fact !== undefined && opts.factChange !== undefined) {
      const { handled, reconciled } = opts.factChange
      statements.push(statement(sql.changeFact, { ...base, fkey: `${order.key}|${order.fact}`, handled, reconciled }))
    }
    statements.push(statement(sql.unlock, { ...base, okey: order.key }))
  }
  return { statements, read: (rows) => (rows[0]?.length ?? 0) === 1 }
}

/** The release: the lease given up (and the order key the claim holds freed). */
export function releaseOperation(
  sql: DedupSql,
  claim: { key: string; token: string; orderKey?: string | undefined },
  now: number,
): Operation<boolean> {
  const values = { key: claim.key, token: claim.token, now, okey: claim.orderKey ?? '' }
  const statements = [statement(sql.release, values)]
  if (claim.orderKey !== undefined) statements.push(statement(sql.releaseLock, values))
  return { statements, read: (rows) => (rows[0]?.length ?? 0) === 1 }
}

/** The renewal of a live lease (and of the order key the claim holds). */
export function extendOperation(
  sql: DedupSql,
  claim: { key: string; token: string; orderKey?: string | undefined },
  leaseMs: number,
  now: number,
): Operation<boolean> {
  const values = { key: claim.key, token: claim.token, now, lease: leaseMs, okey: claim.orderKey ?? '' }
  const statements = [statement(sql.extend, values)]
  if (claim.orderKey !== undefined) statements.push(statement(sql.extendLock, values))
  return { statements, read: (rows) => (rows[0]?.length ?? 0) === 1 }
}

/** What the table holds for a key now. */
export function lookupOperation(sql: DedupSql, key: string, now: number): Operation<DedupKeyState> {
  return {
    statements: [statement(sql.lookup, { key })],
    read(rows) {
      const state = holderState(rows[0]?.[0], now)
      return typeof state === 'object' ? 'in_flight' : state
    },
  }
}
