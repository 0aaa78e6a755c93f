// The ordering conformance suite, proven on a reference implementation of the capability (a
// wrapper around a MemoryDedupStore with its own marks hidden, written here) and shown to fail on
// deliberately wrong stores.
import {
  type Claim,
  type ClaimOrder,
  compareOrderPositions,
  type DedupStore,
  type FactCounts,
  type OrderingClaimOptions,
  type OrderingClaimResult,
  type OrderingCompleteOptions,
  type OrderingDedupStore,
  type OrderMark,
  type StoreOrderInput,
} from '@email-webhooks/core'
import { type OrderingConformanceOptions, orderingConformance } from '@email-webhooks/core/testing'
import { describe, expect, it } from 'vitest'
import { WithoutOrdering } from '../store/conformance-helpers.js'
import { scaled } from '../support/time.js'

const SHORT_MS = 150

/**
 * Reference ordering store: marks in a Map next to the memory dedup store, compare-and-set in one
 * synchronous step; the claim that holds each order key in another Map, checked and taken in the
 * same synchronous step as the dedup claim (the inner store answers before any other call runs).
 */
class OrderedMemoryStore implements OrderingDedupStore {
  readonly ordering = true as const
  /** The dedup part; `order` never reaches it (its own marks and locks stay unused). */
  protected readonly inner = new WithoutOrdering()
  protected readonly marks = new Map<string, { mark: OrderMark; expiresAt: number }>()
  protected readonly locks = new Map<string, { token: string; expiresAt: number }>()
  protected readonly facts = new Map<string, FactCounts & { expiresAt: number }>()

  /** Claims run one after another, so that reading the lock and taking it is one step. */
  #claims: Promise<unknown> = Promise.resolve()

  claim(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult> {
    const next = this.#claims.then(() => this.claimNow(key, opts))
    this.#claims = next.catch(() => {})
    return next
  }

  protected async claimNow(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult> {
    if (!opts.order) return this.inner.claim(key, opts)
    const orderKey = opts.order.key
    const lock = this.locks.get(orderKey)
    const own = await this.inner.lookup(key)
    if (own === 'absent' && lock && lock.expiresAt > Date.now()) {
      return { status: 'in_flight', retryAfterMs: lock.expiresAt - Date.now(), reason: 'order' }
    }
    const result = await this.inner.claim(key, opts)
    if (result.status !== 'acquired') return result
    this.locks.set(orderKey, { token: result.claim.token, expiresAt: Date.now() + opts.leaseMs })
    const order: ClaimOrder = { mark: this.read(orderKey) }
    if (opts.order.fact !== undefined) order.fact = this.countsOf(`${orderKey}|${opts.order.fact}`)
    return { ...result, claim: { ...result.claim, orderKey }, order }
  }

  async complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean> {
    const done = await this.inner.complete(claim, opts)
    if (done && opts.order) this.advance(opts.order, opts.retentionMs)
    if (done) this.count(opts)
    if (done) this.unlock(claim)
    return done
  }

  protected countsOf(key: string): FactCounts {
    const fact = this.facts.get(key)
    return fact && fact.expiresAt > Date.now() ? { handled: fact.handled, reconciled: fact.reconciled } : { handled: 0, reconciled: 0 }
  }

  protected count(opts: OrderingCompleteOptions): void {
    if (opts.order?.fact === undefined || !opts.factChange) return
    const key = `${opts.order.key}|${opts.order.fact}`
    const now = this.countsOf(key)
    this.facts.set(key, {
      handled: now.handled + opts.factChange.handled,
      reconciled: Math.max(0, now.reconciled + opts.factChange.reconciled),
      expiresAt: Date.now() + opts.retentionMs,
    })
  }

  async release(claim: Claim): Promise<boolean> {
    const released = await this.inner.release(claim)
    if (released) this.unlock(claim)
    return released
  }

  protected unlock(claim: Claim): void {
    if (claim.orderKey !== undefined && this.locks.get(claim.orderKey)?.token === claim.token) this.locks.delete(claim.orderKey)
  }

  close(): Promise<void> {
    this.marks.clear()
    return this.inner.close()
  }

  protected read(key: string): OrderMark | null {
    const entry = this.marks.get(key)
    return entry && entry.expiresAt > Date.now() ? { ...entry.mark } : null
  }

  protected isNewer(next: OrderMark, current: OrderMark): boolean {
    return compareOrderPositions(next, current) > 0
  }

  protected advance(order: StoreOrderInput, retentionMs: number): void {
    const current = this.read(order.key)
    const mark = current === null || this.isNewer(order.mark, current) ? { ...order.mark } : current
    this.marks.set(order.key, { mark, expiresAt: Date.now() + retentionMs })
  }
}

// Deliberately wrong stores, one fault each.
class AdvancesAtClaim extends OrderedMemoryStore {
  protected override async claimNow(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult> {
    const result = await super.claimNow(key, opts)
    if (result.status === 'acquired' && opts.order) this.advance(opts.order, opts.retentionMs)
    return result
  }
}
class LastWriterWins extends OrderedMemoryStore {
  protected override isNewer(): boolean {
    return true
  }
}
class NoTieBreak extends OrderedMemoryStore {
  protected override isNewer(next: OrderMark, current: OrderMark): boolean {
    return next.createdAtMs > current.createdAtMs
  }
}
class LocaleCollation extends OrderedMemoryStore {
  protected override isNewer(next: OrderMark, current: OrderMark): boolean {
    if (next.createdAtMs !== current.createdAtMs) return next.createdAtMs > current.createdAtMs
    return next.eventId.localeCompare(current.eventId, 'en') > 0
  }
}
class UnfencedMark extends OrderedMemoryStore {
  override async complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean> {
    if (opts.order) this.advance(opts.order, opts.retentionMs)
    return this.inner.complete(claim, opts)
  }
}
class ReadThenWrite extends OrderedMemoryStore {
  override async complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean> {
    const done = await this.inner.complete(claim, opts)
    if (!done || !opts.order) return done
    const { key, mark } = opts.order
    const current = this.read(key)
    await new Promise((resolve) => setImmediate(resolve)) // a network round trip between read and write
    if (current === null || compareOrderPositions(mark, current) > 0)
      this.marks.set(key, { mark, expiresAt: Date.now() + opts.retentionMs })
    return done
  }
}
class SharesDedupKeys extends OrderedMemoryStore {
  override async complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean> {
    const done = await super.complete(claim, opts)
    if (done && opts.order) {
      const marker = await this.inner.claim(opts.order.key, { leaseMs: 60_000, retentionMs: opts.retentionMs })
      if (marker.status === 'acquired') await this.inner.complete(marker.claim, opts)
    }
    return done
  }
}
class NeverForgets extends OrderedMemoryStore {
  protected override advance(order: StoreOrderInput): void {
    super.advance(order, 3_600_000)
  }
}
class NoRefresh extends OrderedMemoryStore {
  protected override advance(order: StoreOrderInput, retentionMs: number): void {
    const before = this.marks.get(order.key)
    super.advance(order, retentionMs)
    const after = this.marks.get(order.key)
    if (before && after && before.expiresAt > Date.now() && after.mark.eventId === before.mark.eventId) after.expiresAt = before.expiresAt
  }
}
class FactsUnfenced extends OrderedMemoryStore {
  override async complete(claim: Claim, opts: OrderingCompleteOptions): Promise<boolean> {
    this.count(opts)
    return super.complete(claim, { ...opts, factChange: { handled: 0, reconciled: 0 } })
  }
}
class NoOrderLock extends OrderedMemoryStore {
  protected override async claimNow(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult> {
    const result = await this.inner.claim(key, opts)
    if (result.status !== 'acquired' || !opts.order) return result
    return { ...result, claim: { ...result.claim, orderKey: opts.order.key }, order: { mark: this.read(opts.order.key) } }
  }
}
class DeclaresButSilent extends OrderedMemoryStore {
  protected override async claimNow(key: string, opts: OrderingClaimOptions): Promise<OrderingClaimResult> {
    return this.inner.claim(key, opts)
  }
}

// Proven on the reference store, test by test, under vitest.
orderingConformance('reference OrderedMemoryStore', { describe, it }, { createStore: () => new OrderedMemoryStore(), shortMs: SHORT_MS })
orderingConformance(
  'a store without the capability',
  { describe, it },
  { createStore: () => new WithoutOrdering(), expectCapability: false },
)

/** Runs every registered case and returns each case's failure message (undefined when it passed). */
async function outcomes(
  createStore: () => DedupStore,
  extra: Partial<OrderingConformanceOptions> = {},
): Promise<Map<string, string | undefined>> {
  const cases: Array<{ name: string; fn: () => Promise<void> }> = []
  orderingConformance(
    'captured',
    { describe: (_name, fn) => fn(), it: (name, fn) => void cases.push({ name, fn }) },
    // A wrong store may never free an email: its case fails after freeWaitMs, which need not be 10 s here.
    { createStore, shortMs: SHORT_MS, rounds: 8, freeWaitMs: scaled(2_000), ...extra },
  )
  const results = await Promise.all(
    cases.map(async ({ name, fn }) => {
      try {
        await fn()
        return [name, undefined] as const
      } catch (error) {
        expect((error as Error).name).toBe('OrderingConformanceFailure')
        return [name, (error as Error).message] as const
      }
    }),
  )
  return new Map(results)
}
const failed = (results: Map<string, string | undefined>) =>
  [...results].filter(([, message]) => message !== undefined).map(([name]) => name)

describe('the ordering conformance suite tells a correct store from wrong ones', () => {
  it('passes every case on the reference store, and registers the cases the issue asks for', async () => {
    const results = await outcomes(() => new OrderedMemoryStore())
    expect(failed(results)).toEqual([])
    const names = [...results.keys()].join('\n')
    for (const topic of ['race', 'equal created_at', 'crash between claim and complete', 'stale', 'claim time', 'holds the email'])
      expect(names).toContain(topic)
    expect(results.size).toBeGreaterThanOrEqual(10)
  })

  it.each([
    [
      'advances the mark at claim time',
      () => new AdvancesAtClaim(),
      ['never moves the mark at claim time', 'crash between claim and complete', 'release or a complete with a forged token'],
    ],
    [
      'overwrites the mark with an older event',
      () => new LastWriterWins(),
      ['older event arriving after a newer one', 'equal created_at', 'two events of one email race', 'many concurrent events'],
    ],
    ['ignores the event-id tie-break', () => new NoTieBreak(), ['equal created_at']],
    ['compares event ids in a locale collation instead of byte order', () => new LocaleCollation(), ['equal created_at']],
    ['moves the mark even when complete is refused', () => new UnfencedMark(), ['crash between claim and complete', 'forged token']],
    ['reads the mark and writes it back in two steps', () => new ReadThenWrite(), ['two events of one email race']],
    ['keeps marks among dedup keys', () => new SharesDedupKeys(), ['apart from dedup keys']],
    ['never forgets a mark', () => new NeverForgets(), ['forgets a mark after its retention']],
    ['does not refresh the mark on a stale complete', () => new NoRefresh(), ['every complete refreshes it']],
    ['declares ordering but returns no mark', () => new DeclaresButSilent(), ['reports no mark (first)', 'two events of one email race']],
    ['changes a fact even when complete is refused', () => new FactsUnfenced(), ['changes no fact on a refused complete']],
    [
      'lets two events of one email be claimed at once',
      () => new NoOrderLock(),
      ['holds the email while an event is claimed', 'frees the email', 'exactly one of many concurrent claims'],
    ],
  ])('fails a store that %s', async (_fault, create, mustFail) => {
    const names = failed(await outcomes(create))
    for (const part of mustFail)
      expect(
        names.some((name) => name.includes(part)),
        `a case about "${part}" fails; failed: ${names.join(' | ')}`,
      ).toBe(true)
  })

  it('fails every ordering case for a store without the capability unless expectCapability is false', async () => {
    const results = await outcomes(() => new WithoutOrdering())
    expect(failed(results)).toEqual([...results.keys()])
    for (const message of results.values()) expect(message).toMatch(/ordering: true.*expectCapability: false/)
    const without = await outcomes(() => new WithoutOrdering(), { expectCapability: false })
    expect(without.size).toBe(1)
    expect(failed(without)).toEqual([])
  })

  it('fails the no-capability case for a store that declares the capability', async () => {
    expect(failed(await outcomes(() => new OrderedMemoryStore(), { expectCapability: false }))).toHaveLength(1)
  })
})
