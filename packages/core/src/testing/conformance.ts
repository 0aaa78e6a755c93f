/**
 * The dedup-store conformance suite: the rules of DESIGN.md's `DedupStore` as tests that any
 * store can run under vitest, jest or node:test (pass the runner's `describe` and `it`).
 * It uses real time with short leases, because every store computes expiry on its own clock.
 */
import type { Claim, ClaimResult, DedupStore } from '@email-webhooks/core'

/** The test functions of your runner: vitest, jest and node:test all fit. */
export interface ConformanceRunner {
  describe(name: string, fn: () => void): unknown
  it(name: string, fn: () => Promise<void>): unknown
}

/** Options of {@link dedupStoreConformance}. */
export interface DedupStoreConformanceOptions {
  /** Returns a ready store; called once per test. Keys are random, so a shared store also works. */
  createStore(): DedupStore | Promise<DedupStore>
  /** Closes the store after each test (default true). Set false when `createStore` returns a shared instance. */
  closeAfterEach?: boolean
  /** Short lease and retention used by the expiry tests; default 300 ms. Raise it for a slow remote store. */
  shortMs?: number
  /** Concurrent claims of one key in the race test; default 200. */
  concurrency?: number
}

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

class ConformanceFailure extends Error {
  override readonly name = 'ConformanceFailure'
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ConformanceFailure(message)
}

function acquired(result: ClaimResult, what: string): Claim {
  check(result.status === 'acquired', `${what}: expected 'acquired', got ${JSON.stringify(result)}`)
  return result.claim
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Registers the conformance tests for a store.
 * @example
 * import { describe, it } from 'vitest'
 * dedupStoreConformance('my store', { describe, it }, { createStore: () => new MyStore(db) })
 */
export function dedupStoreConformance(name: string, runner: ConformanceRunner, options: DedupStoreConformanceOptions): void {
  const shortMs = options.shortMs ?? 300
  const concurrency = options.concurrency ?? 200
  const closeAfterEach = options.closeAfterEach ?? true
  const newKey = () => `conformance:${crypto.randomUUID()}`

  function test(title: string, body: (store: DedupStore) => Promise<void>): void {
    runner.it(title, async () => {
      const store = await options.createStore()
      try {
        await body(store)
      } finally {
        if (closeAfterEach) await store.close?.()
      }
    })
  }

  runner.describe(`DedupStore conformance: ${name}`, () => {
    test('acquires a new key with attempt 1 and a non-empty token', async (store) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check(claim.key === key, 'the claim names its key')
      check(typeof claim.token === 'string' && claim.token.length > 0, 'the claim has a non-empty token')
      check(claim.attempt === 1, `first attempt is 1, got ${claim.attempt}`)
    })

    test('answers in_flight with 0 < retryAfterMs <= leaseMs while the lease is live', async (store) => {
      const key = newKey()
      acquired(await store.claim(key, LONG), 'first claim')
      const second = await store.claim(key, LONG)
      check(second.status === 'in_flight', `second claim is in_flight, got ${second.status}`)
      check(second.retryAfterMs > 0 && second.retryAfterMs <= LONG.leaseMs, `retryAfterMs in (0, leaseMs], got ${second.retryAfterMs}`)
    })

    test('answers duplicate after complete, for as long as the retention lasts', async (store) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check((await store.complete(claim, LONG)) === true, 'complete with the owning token returns true')
      check((await store.claim(key, LONG)).status === 'duplicate', 'a claim after complete is a duplicate')
      check((await store.claim(key, LONG)).status === 'duplicate', 'and stays one')
    })

    test('refuses complete and release with a forged token', async (store) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      for (const token of ['forged', '', crypto.randomUUID()]) {
        check((await store.complete({ ...claim, token }, LONG)) === false, `complete with token ${JSON.stringify(token)} is refused`)
        check((await store.release({ ...claim, token })) === false, `release with token ${JSON.stringify(token)} is refused`)
      }
      check((await store.claim(key, LONG)).status === 'in_flight', 'the key is still held by its owner')
      check((await store.complete(claim, LONG)) === true, 'the owner can still complete')
    })

    test('lets another worker re-acquire after the lease ends, with attempt 2, and fences the stale token', async (store) => {
      const key = newKey()
      const first = acquired(await store.claim(key, { leaseMs: shortMs, retentionMs: LONG.retentionMs }), 'first claim')
      await sleep(shortMs + 150)
      const second = acquired(await store.claim(key, LONG), 'claim after the lease ended')
      check(second.attempt === 2, `attempt after a lapsed lease is 2, got ${second.attempt}`)
      check(second.token !== first.token, 'the new claim has a new token')
      check((await store.complete(first, LONG)) === false, 'the stale token cannot complete')
      check((await store.release(first)) === false, 'the stale token cannot release')
      check((await store.claim(key, LONG)).status === 'in_flight', 'the new owner still holds the key')
      check((await store.complete(second, LONG)) === true, 'the new owner completes')
    })

    test('makes a released key claimable at once, with the next attempt number', async (store) => {
      const key = newKey()
      const first = acquired(await store.claim(key, LONG), 'first claim')
      check((await store.release(first)) === true, 'release with the owning token returns true')
      const second = acquired(await store.claim(key, LONG), 'claim right after release')
      check(second.attempt === 2, `attempt after a release is 2, got ${second.attempt}`)
      check((await store.release(first)) === false, 'releasing again with the old token is refused')
      check((await store.complete(first, LONG)) === false, 'completing with the released token is refused')
    })

    test('forgets a completed key once its retention expires', async (store) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check((await store.complete(claim, { retentionMs: shortMs })) === true, 'complete returns true')
      check((await store.claim(key, LONG)).status === 'duplicate', 'duplicate while retained')
      await sleep(shortMs + 150)
      const again = acquired(await store.claim(key, LONG), 'claim after retention expired')
      check(again.attempt === 1, `a forgotten key starts again at attempt 1, got ${again.attempt}`)
    })

    test('completes once: a second complete, or a release after complete, is refused', async (store) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check((await store.complete(claim, LONG)) === true, 'first complete returns true')
      check((await store.complete(claim, LONG)) === false, 'second complete returns false')
      check((await store.release(claim)) === false, 'release after complete returns false')
      check((await store.claim(key, LONG)).status === 'duplicate', 'the key stays a duplicate')
    })

    test('keeps keys independent', async (store) => {
      const a = newKey()
      const b = newKey()
      const claimA = acquired(await store.claim(a, LONG), 'claim of a')
      acquired(await store.claim(b, LONG), 'claim of b while a is held')
      await store.complete(claimA, LONG)
      check((await store.claim(b, LONG)).status === 'in_flight', 'completing a leaves b in flight')
    })

    test(`grants exactly one of ${concurrency} concurrent claims of one key`, async (store) => {
      const key = newKey()
      const results = await Promise.all(Array.from({ length: concurrency }, () => store.claim(key, LONG)))
      const wins = results.filter((result) => result.status === 'acquired').length
      const inFlight = results.filter((result) => result.status === 'in_flight').length
      check(wins === 1, `exactly one acquired, got ${wins}`)
      check(inFlight === concurrency - 1, `the other ${concurrency - 1} are in_flight, got ${inFlight}`)
    })

    test('hands out a distinct token per claim', async (store) => {
      const tokens = new Set<string>()
      for (let i = 0; i < 20; i++) tokens.add(acquired(await store.claim(newKey(), LONG), 'claim').token)
      check(tokens.size === 20, `20 claims give 20 tokens, got ${tokens.size}`)
    })
  })
}
