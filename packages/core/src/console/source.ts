/**
 * What the console reads from a store, behind one small interface: each built-in store answers it
 * with queries of its own (store/<name>/console.ts), registered when the store is made
 * (registry.ts); any other store gets the reads its contract offers (contract-source.ts). Types
 * only, so the store subpaths import them without code. Payloads are never part of these reads:
 * only `InboxQueue.get` returns one, when the operator asks for it.
 */
import type { InboxState } from '../store/inbox.js'

/** What a store holds for one dedup key, with the times it knows. */
export interface DedupRecord {
  /**
   * `done`: handled and remembered until `expiresAt`; `in_flight`: claimed under a lease that ends at
   * `expiresAt`; `released`: a lease given up (a failed or refused handler) or lapsed, after
   * `attempt` attempts; `absent`: nothing (never seen, or forgotten after the retention); `unknown`: the
   * store cannot be asked (it has no `lookup`).
   */
  state: 'done' | 'in_flight' | 'released' | 'absent' | 'unknown'
  /** When the done record or the lease ends, ms since the epoch; null when the store does not say. */
  expiresAt: number | null
  /** Attempts of the key's claims so far, when the store keeps them. */
  attempt: number | null
}

/** An inbox entry as the console lists it: everything but the payload. */
export interface EntrySummary {
  key: string
  type: string
  state: InboxState
  attempts: number
  enqueuedAt: number
  nextAttemptAt: number
  endedAt: number | null
  lastError: string | null
  orderKey: string | null
  createdAtMs: number | null
}

/** A page of inbox entries: newest first by the state's time (`ENTRY_TIME`), resumed from `cursor`. */
export interface EntryQuery {
  state: InboxState
  /** Only entries of this event type. */
  type?: string | undefined
  /** Only entries whose time (the state's, see `ENTRY_TIME`) is at or before this, ms. */
  before?: number | undefined
  /** Where the previous page ended (its `next`); opaque to the console. */
  cursor?: string | undefined
  limit: number
}

/** One page of entries. */
export interface EntryPage {
  entries: EntrySummary[]
  /** The cursor of the next page, when there may be one. */
  next: string | undefined
  /** What the store could not do exactly for this page (a bounded scan, an order it keeps differently). */
  note?: string | undefined
}

/** The time an entry is listed by, per state: when it was recorded (waiting, running), or when it ended (handled, dead). */
export const ENTRY_TIME: Readonly<Record<InboxState, 'enqueuedAt' | 'endedAt'>> = Object.freeze({
  pending: 'enqueuedAt',
  running: 'enqueuedAt',
  done: 'endedAt',
  dead: 'endedAt',
})

/** A count the store made, and whether it is exact (a bounded scan stops early). */
export interface Counted {
  count: number
  exact: boolean
}

/** An email's order mark: the newest event recorded as done for it (ordering capability). */
export interface MarkRecord {
  eventId: string
  type: string
  createdAtMs: number
  expiresAt: number | null
}

/** The counts of one fact: an email's events of one type and `created_at` millisecond recorded as done. */
export interface FactRecord {
  type: string
  createdAtMs: number
  handled: number
  reconciled: number
  expiresAt: number | null
}

/** What a store keeps of one email (its order key `namespace:email:<id>`). */
export interface EmailRecords {
  /** null when none is remembered; undefined when the store keeps no marks at all. */
  mark: MarkRecord | null | undefined
  /** Undefined when the store keeps no facts. */
  facts: FactRecord[] | undefined
  /** Its inbox entries (recorded with ordering on, so with the order key); undefined when the store cannot find them by email. */
  entries: EntrySummary[] | undefined
  /** What the store could not read, or read only in part. */
  notes: string[]
}

/** A labelled number about the store, for the overview. */
export interface StoreFigure {
  label: string
  value: number | string | null
  /** What the figure means or why it is missing. */
  note?: string | undefined
}

/** What the overview shows about the store. */
export interface StoreFacts {
  figures: StoreFigure[]
  /** Events recorded as done per hour (the record's expiry minus the retention), oldest first; undefined when the store cannot tell. */
  recordedByHour: Array<{ hour: number; count: number }> | undefined
  notes: string[]
}

/** The console's reads of one store. Every method may reject (the store is down): the pages say so. */
export interface ConsoleSource {
  /** What kind of store and where, never with credentials: `SQLite`, `/app/.email-webhooks/dedup.db`. */
  readonly kind: string
  readonly location: string
  /** Whether `entries` pages with a cursor (false: the first `limit` entries only). */
  readonly paging: boolean
  /** `budgetMs`: how long the store may count before it answers with what it counted (a store that counts in parts). */
  overview(now: number, retentionMs: number, budgetMs?: number): Promise<StoreFacts>
  record(key: string, now: number): Promise<DedupRecord>
  email(orderKey: string, now: number, limit: number): Promise<EmailRecords>
  entries(query: EntryQuery, now: number): Promise<EntryPage>
  countDead(filter: { type?: string | undefined; before?: number | undefined }, now: number): Promise<Counted>
}
