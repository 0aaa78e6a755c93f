/**
 * An in-process dedup store. NOT durable: a restart forgets every event, so retries after a
 * restart run handlers again. For tests and single short-lived processes; use the SQLite
 * store (or a shared one) in production.
 */

import type { OrderMark } from '../../ordering/position.js'
import { compareOrderPositions } from '../../ordering/position.js'
import { callDurationProblem, durationProblem } from '../durations.js'
import { DedupStoreError } from '../errors.js'
import type {
  Claim,
  ClaimOptions,
  ClaimOrder,
  ClaimResult,
  CompleteOptions,
  DedupKeyState,
  DedupStore,
  ExtendOptions,
  FactCounts,
  StoreOrderInput,
} from '../types.js'
import { MemoryInbox } from './inbox.js'

const PACKAGE = '[@email-webhooks/core]'

/** Default number of keys kept before the oldest expired or completed ones are evicted. */
export const DEFAULT_MEMORY_STORE_MAX_KEYS = 100_000

/** Options of {@link MemoryDedupStore}. */
export interface MemoryDedupStoreOptions {
  /**
   * Most keys held (and, apart, most order marks and facts). When full, a batch of the oldest
   * expired or completed keys is evicted; when every key is a live claim, a claim rejects with
   * `full`.
   * @defaultValue `100000`
   */
  maxKeys?: number
  /**
   * Clock in milliseconds, for tests.
   * @defaultValue `Date.now`
   */
  now?: () => number
}

/**
 * A lease (live, released or lapsed). A completed key holds only the time its record expires (a
 * number, not an object): a full store keeps `maxKeys` of them, and the fewer objects each keeps,
 * the less the garbage collector copies and marks per event.
 */
interface Entry {
  /** null once released, so no token (not even an empty one) matches. */
  token: string | null
  attempt: number
  expiresAt: number
}

/** The high-water mark of one order key (ordering capability). */
interface MarkEntry {
  mark: OrderMark
  expiresAt: number
}

/** The counts of one fact (an email's events of one type and millisecond). */
interface FactEntry extends FactCounts {
  expiresAt: number
}

/** The claim that holds one order key (one event of an email at a time). */
interface LockEntry {
  token: string
  expiresAt: number
}

/** The one `duplicate` answer (frozen: callers only read it). */
const DUPLICATE: ClaimResult = Object.freeze({ status: 'duplicate' })

/** Slots of the filter of forgotten marks, per key of `maxKeys` (at least 1,024). */
const MIN_FORGOTTEN_SLOTS = 1_024

/** FNV-1a over the UTF-16 units of `key`: a slot of the forgotten-marks filter. */
function slotOf(key: string, slots: number): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193)
  return (hash >>> 0) % slots
}

/**
 * Dedup store in a `Map`: atomic because JavaScript runs one claim at a time. A claim rejects
 * with a {@link DedupStoreError}: `invalid_options` when `leaseMs` or `retentionMs` is not a
 * whole number of milliseconds ≥ 1, `full` when `maxKeys` live claims leave no room. It has the
 * ordering capability: marks live in a second `Map`, also bounded by `maxKeys` (when full, a
 * batch of the marks written or renewed longest ago is forgotten, which with one retention are
 * the expired ones first). A mark forgotten before its retention ended is noted in a filter of
 * `maxKeys` slots (its expiry, per hashed key), so that key's next event is `unknown`
 * (`mark_evicted`), never a guessed `first`; a key sharing a slot with one may be `unknown` too.
 * One event per order key at a time: an ordered claim holds its order key until it completes, is
 * released or its lease ends.
 * @throws {TypeError} when `maxKeys` is not a whole number ≥ 1.
 * @example
 * const store = new MemoryDedupStore({ maxKeys: 10_000 })
 */
export class MemoryDedupStore implements DedupStore {
  /** Ordering capability: claims with `order` return the mark, completes advance it. */
  readonly ordering = true as const
  readonly #entries = new Map<string, Entry | number>()
  readonly #marks = new Map<string, MarkEntry>()
  readonly #locks = new Map<string, LockEntry>()
  readonly #facts = new Map<string, FactEntry>()
  /** Per slot, the latest expiry of a live mark forgotten there (0: none). */
  readonly #forgotten: Float64Array
  readonly #maxKeys: number
  readonly #now: () => number
  /** Claims made so far, and the random prefix of their tokens. */
  #claims = 0
  readonly #tokenPrefix = `${crypto.randomUUID().slice(0, 8)}-`
  /** The store's inbox (not durable, like the store): entries in this process. */
  readonly inbox: MemoryInbox

  constructor(options: MemoryDedupStoreOptions = {}) {
    const maxKeys = options.maxKeys ?? DEFAULT_MEMORY_STORE_MAX_KEYS
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new TypeError('[@email-webhooks/core] MemoryDedupStore maxKeys must be a whole number ≥ 1.')
    }
    this.#maxKeys = maxKeys
    this.#now = options.now ?? Date.now
    this.#forgotten = new Float64Array(Math.max(MIN_FORGOTTEN_SLOTS, maxKeys))
    this.inbox = new MemoryInbox(this.#now)
  }

  /** Number of keys currently held (including expired ones not yet evicted). */
  get size(): number {
    return this.#entries.size
  }

  claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    const invalid = invalidDurations(opts, true)
    if (invalid) return Promise.reject(invalid)
    const now = this.#now()
    const entry = this.#entries.get(key)
    if (typeof entry === 'number') {
      if (entry > now) return Promise.resolve(DUPLICATE)
    } else if (entry && entry.expiresAt > now) return Promise.resolve({ status: 'in_flight', retryAfterMs: entry.expiresAt - now })
    const order = opts.order
    const lock = order ? this.#locks.get(order.key) : undefined
    if (lock && lock.expiresAt > now) {
      return Promise.resolve({ status: 'in_flight', retryAfterMs: lock.expiresAt - now, reason: 'order' })
    }
    const attempt = entry !== undefined && typeof entry !== 'number' ? entry.attempt + 1 : 1
    if (entry !== undefined) this.#entries.delete(key)
    else if (this.#entries.size >= this.#maxKeys && !this.#evict(now)) {
      return Promise.reject(
        new DedupStoreError(
          'full',
          `${PACKAGE} MemoryDedupStore is full: all ${this.#maxKeys} keys are live claims, none expired or completed. Raise maxKeys (new MemoryDedupStore({ maxKeys })), shorten leaseMs, or use a durable store such as SqliteDedupStore.`,
        ),
      )
    }
    const token = this.#nextToken()
    this.#entries.set(key, { token, attempt, expiresAt: now + opts.leaseMs })
    if (!order) return Promise.resolve({ status: 'acquired', claim: { key, token, attempt } })
    if (lock) this.#locks.delete(order.key)
    else if (this.#locks.size >= this.#maxKeys) this.#dropLapsedLocks(now)
    this.#locks.set(order.key, { token, expiresAt: now + opts.leaseMs })
    const claim = { key, token, attempt, orderKey: order.key }
    const held = this.#marks.get(order.key)
    const result: ClaimOrder = { mark: null }
    if (held && held.expiresAt > now) result.mark = { ...held.mark }
    else if ((this.#forgotten[slotOf(order.key, this.#forgotten.length)] as number) > now) result.forgotten = true
    if (order.fact !== undefined) {
      const fact = this.#facts.get(`${order.key}|${order.fact}`)
      result.fact = fact && fact.expiresAt > now ? { handled: fact.handled, reconciled: fact.reconciled } : { handled: 0, reconciled: 0 }
    }
    return Promise.resolve({ status: 'acquired', claim, order: result })
  }

  complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    const invalid = invalidDurations(opts, false)
    if (invalid) return Promise.reject(invalid)
    const entry = this.#entries.get(claim.key)
    if (entry === undefined || typeof entry === 'number' || entry.token !== claim.token) return Promise.resolve(false)
    const now = this.#now()
    // Setting an existing key keeps its place in the Map (the eviction order).
    this.#entries.set(claim.key, now + opts.retentionMs)
    if (opts.order) this.#advance(opts.order, now, now + opts.retentionMs)
    if (opts.order?.fact !== undefined && opts.factChange)
      this.#count(`${opts.order.key}|${opts.order.fact}`, opts.factChange, now, now + opts.retentionMs)
    this.#unlock(claim)
    return Promise.resolve(true)
  }

  release(claim: Claim): Promise<boolean> {
    const entry = this.#entries.get(claim.key)
    if (entry === undefined || typeof entry === 'number' || entry.token !== claim.token) return Promise.resolve(false)
    entry.token = null
    entry.expiresAt = 0
    this.#unlock(claim)
    return Promise.resolve(true)
  }

  extend(claim: Claim, opts: ExtendOptions): Promise<boolean> {
    const problem = durationProblem('leaseMs', opts?.leaseMs)
    if (problem) return Promise.reject(new DedupStoreError('invalid_options', `${PACKAGE} MemoryDedupStore: ${problem}`))
    const entry = this.#entries.get(claim.key)
    const now = this.#now()
    if (entry === undefined || typeof entry === 'number' || entry.token !== claim.token || entry.expiresAt <= now)
      return Promise.resolve(false)
    entry.expiresAt = now + opts.leaseMs
    const lock = claim.orderKey === undefined ? undefined : this.#locks.get(claim.orderKey)
    if (lock?.token === claim.token) lock.expiresAt = entry.expiresAt
    return Promise.resolve(true)
  }

  lookup(key: string): Promise<DedupKeyState> {
    const entry = this.#entries.get(key)
    if (typeof entry === 'number') return Promise.resolve(entry > this.#now() ? 'done' : 'absent')
    if (!entry || entry.expiresAt <= this.#now()) return Promise.resolve('absent')
    return Promise.resolve('in_flight')
  }

  close(): Promise<void> {
    this.#entries.clear()
    this.#marks.clear()
    this.#locks.clear()
    this.#facts.clear()
    this.#forgotten.fill(0)
    this.inbox.clear()
    return Promise.resolve()
  }

  /** A token no other claim of this store had: distinct, not secret (a UUID per claim cost more than the claim). */
  #nextToken(): string {
    return this.#tokenPrefix + (++this.#claims).toString(36)
  }

  /** Adds `change` to a fact's counts (a lapsed fact counts from zero) and renews its expiry; forgets the oldest when full. */
  #count(key: string, change: FactCounts, now: number, expiresAt: number): void {
    const held = this.#facts.get(key)
    const live = held && held.expiresAt > now ? held : undefined
    if (held) this.#facts.delete(key)
    else if (this.#facts.size >= this.#maxKeys) {
      for (const oldest of this.#facts.keys()) {
        this.#facts.delete(oldest)
        break
      }
    }
    this.#facts.set(key, {
      handled: (live?.handled ?? 0) + change.handled,
      reconciled: Math.max(0, (live?.reconciled ?? 0) + change.reconciled),
      expiresAt,
    })
  }

  /** Frees the order key the claim holds, if it still holds it. */
  #unlock(claim: Claim): void {
    if (claim.orderKey === undefined) return
    if (this.#locks.get(claim.orderKey)?.token === claim.token) this.#locks.delete(claim.orderKey)
  }

  /** Drops locks whose lease ended (a handler that never settled); live locks are bounded by live claims. */
  #dropLapsedLocks(now: number): void {
    for (const [key, lock] of this.#locks) if (lock.expiresAt <= now) this.#locks.delete(key)
  }

  /** Sets the mark of `order.key` to `order.mark` if none is live or it is newer; renews its expiry either way. */
  #advance(order: StoreOrderInput, now: number, expiresAt: number): void {
    const held = this.#marks.get(order.key)
    // Every write moves the mark to the end of the Map, which so stays in renewal order: its front
    // holds the marks that expire first (all marks of one receiver have the same retention).
    if (held) this.#marks.delete(order.key)
    else if (this.#marks.size >= this.#maxKeys) this.#evictMarks(now)
    const kept = held && held.expiresAt > now && compareOrderPositions(order.mark, held.mark) <= 0
    this.#marks.set(order.key, { mark: kept ? held.mark : { ...order.mark }, expiresAt })
  }

  /**
   * Frees room for marks: a batch (1 % of `maxKeys`) from the front, the marks renewed longest
   * ago: expired ones first, then those nearest their expiry. Never a walk over every mark, which
   * would run on every event once marks expire about as fast as they come. A live mark forgotten
   * here leaves its expiry in the filter, so its key's next claim reports the mark `forgotten`.
   */
  #evictMarks(now: number): void {
    let budget = Math.max(1, Math.floor(this.#maxKeys / 100))
    const slots = this.#forgotten
    for (const [key, { expiresAt }] of this.#marks) {
      this.#marks.delete(key)
      if (expiresAt > now) {
        const slot = slotOf(key, slots.length)
        if ((slots[slot] as number) < expiresAt) slots[slot] = expiresAt
      }
      if (--budget === 0) break
    }
  }

  /**
   * Frees room: a batch of the oldest keys that are expired or completed (so that a full store
   * does not scan on every claim). False when only live claims remain.
   */
  #evict(now: number): boolean {
    // A Map iterates in insertion order, and a claim re-inserts its key: the oldest keys come
    // first, so the batch is found at the front instead of by a walk over every key (which cost
    // ~2 µs per claim in a full store of 100,000 keys).
    let budget = Math.max(1, Math.floor(this.#maxKeys / 100))
    let freed = false
    for (const [key, entry] of this.#entries) {
      if (typeof entry !== 'number' && entry.expiresAt > now) continue
      this.#entries.delete(key)
      freed = true
      if (--budget === 0) break
    }
    return freed
  }
}

/** The `invalid_options` error for a call's durations, or undefined when they are whole milliseconds. */
function invalidDurations(opts: Partial<ClaimOptions>, withLease: boolean): DedupStoreError | undefined {
  const problem = callDurationProblem(opts, withLease)
  return problem ? new DedupStoreError('invalid_options', `${PACKAGE} MemoryDedupStore: ${problem}`) : undefined
}
