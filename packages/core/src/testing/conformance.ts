/**
 * The dedup-store conformance suite: the rules of DESIGN.md's `DedupStore` as tests that any
 * store can run under vitest, jest or node:test (pass the runner's `describe` and `it`).
 * It uses real time with short leases, because every store computes expiry on its own clock.
 * The `lookup` tests are skipped (vitest, node:test) or pass empty (jest) for a store without `lookup`.
 */
import type { Claim, ClaimResult, DedupKeyState, DedupStore } from '@email-webhooks/core'

/**
 * The test functions of your runner: vitest, jest and node:test all fit. `it` passes its test
 * context to `fn`; a context with `skip()` (vitest, node:test) marks tests that do not apply as skipped.
 */
export interface ConformanceRunner {
  describe(name: string, fn: () => void): unknown
  it(name: string, fn: (...args: unknown[]) => Promise<void>): unknown
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
  /**
   * Also check that the store refuses `leaseMs`/`retentionMs` that are not whole milliseconds ≥ 1
   * with a `DedupStoreError` of code `'invalid_options'`, taking nothing. The built-in stores do;
   * the receiver checks its own options when it is created, so a custom store need not. Default false.
   */
  checkDurations?: boolean
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

/** Durations no store may accept: each must be a whole number of milliseconds ≥ 1. */
const INVALID_DURATIONS = [1500.5, 0.5, -1, Number.NaN]

/** Runs `call` (which may throw or reject) and checks that it fails with `code: 'invalid_options'`. */
async function rejectsAsInvalid(call: () => Promise<unknown>, what: string): Promise<void> {
  let outcome: unknown
  try {
    outcome = await call()
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code
    check(code === 'invalid_options', `${what}: expected an error with code 'invalid_options', got ${String(error)} (code ${String(code)})`)
    return
  }
  check(false, `${what}: expected an error with code 'invalid_options', got ${JSON.stringify(outcome)}`)
}

/** Marks the running test skipped through its context (vitest, node:test); under jest it just passes. */
function skipTest(context: unknown, reason: string): void {
  const skip = (context as { skip?: unknown } | null | undefined)?.skip
  if (typeof skip === 'function') skip.call(context, reason)
}

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

  /** A test of the optional `lookup`: skipped, as not applicable, on a store without it. */
  function lookupTest(title: string, body: (store: DedupStore, lookup: (key: string) => Promise<DedupKeyState>) => Promise<void>): void {
    // A rest parameter keeps fn.length at 0: jest reads a declared parameter as a done callback.
    runner.it(`lookup: ${title}`, async (...args: unknown[]) => {
      const context = args[0]
      const store = await options.createStore()
      try {
        const lookup = store.lookup?.bind(store)
        if (!lookup) return skipTest(context, 'not applicable: the store has no lookup()')
        await body(store, async (key) => {
          const state = await lookup(key)
          check(
            state === 'done' || state === 'in_flight' || state === 'absent',
            `lookup answers 'done', 'in_flight' or 'absent', got ${JSON.stringify(state)}`,
          )
          return state
        })
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

    if (options.checkDurations) {
      test("refuses leaseMs and retentionMs that are not whole milliseconds ≥ 1 with code 'invalid_options', and takes nothing", async (store) => {
        const key = newKey()
        for (const bad of INVALID_DURATIONS) {
          await rejectsAsInvalid(() => store.claim(key, { leaseMs: bad, retentionMs: LONG.retentionMs }), `claim with leaseMs ${bad}`)
          await rejectsAsInvalid(() => store.claim(key, { leaseMs: LONG.leaseMs, retentionMs: bad }), `claim with retentionMs ${bad}`)
        }
        const claim = acquired(await store.claim(key, LONG), 'a valid claim after the refused ones')
        check(claim.attempt === 1, `the refused claims took nothing: attempt is 1, got ${claim.attempt}`)
        for (const bad of INVALID_DURATIONS) {
          await rejectsAsInvalid(() => store.complete(claim, { retentionMs: bad }), `complete with retentionMs ${bad}`)
        }
        check((await store.claim(key, LONG)).status === 'in_flight', 'a refused complete leaves the key in flight')
        check((await store.complete(claim, LONG)) === true, 'the owner still completes with a valid retention')
      })
    }

    lookupTest("answers 'absent' for a key never claimed, and the read takes nothing", async (store, lookup) => {
      const key = newKey()
      check((await lookup(key)) === 'absent', 'an unknown key is absent')
      check((await lookup(key)) === 'absent', 'and stays absent when read again')
      check(
        acquired(await store.claim(key, LONG), 'claim after lookup').attempt === 1,
        'lookup did not claim: the first claim has attempt 1',
      )
    })

    lookupTest("answers 'in_flight' while a claim holds the key, without changing it", async (store, lookup) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check((await lookup(key)) === 'in_flight', 'a claimed key is in_flight')
      check((await store.claim(key, LONG)).status === 'in_flight', 'the key is still held after lookup')
      check((await store.complete(claim, LONG)) === true, 'the owner still completes after lookup')
    })

    lookupTest("answers 'done' after complete", async (store, lookup) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check((await store.complete(claim, LONG)) === true, 'complete returns true')
      check((await lookup(key)) === 'done', 'a completed key is done')
      check((await store.claim(key, LONG)).status === 'duplicate', 'and still a duplicate after lookup')
    })

    lookupTest("answers 'absent' after release", async (store, lookup) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check((await store.release(claim)) === true, 'release returns true')
      check((await lookup(key)) === 'absent', 'a released key is absent')
      check(
        acquired(await store.claim(key, LONG), 'claim after release').attempt === 2,
        'lookup kept the attempt count: the next claim is attempt 2',
      )
    })

    lookupTest("answers 'absent' once the lease expires", async (store, lookup) => {
      const key = newKey()
      acquired(await store.claim(key, { leaseMs: shortMs, retentionMs: LONG.retentionMs }), 'first claim')
      check((await lookup(key)) === 'in_flight', 'in_flight while the lease is live')
      await sleep(shortMs + 150)
      check((await lookup(key)) === 'absent', 'absent once the lease has expired')
      check(acquired(await store.claim(key, LONG), 'claim after the lease').attempt === 2, 'the next claim is attempt 2')
    })

    lookupTest("answers 'absent' once the retention of a completed key expires", async (store, lookup) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check((await store.complete(claim, { retentionMs: shortMs })) === true, 'complete returns true')
      check((await lookup(key)) === 'done', 'done while retained')
      await sleep(shortMs + 150)
      check((await lookup(key)) === 'absent', 'absent once the retention has expired')
    })
  })
}
