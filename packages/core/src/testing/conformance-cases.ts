/**
 * The cases of the dedup-store conformance suite (conformance.ts registers them), grouped by the
 * rule they check, and the checks they share.
 */
import type { Claim, ClaimResult, DedupKeyState, DedupStore } from '@email-webhooks/core'

export const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

class ConformanceFailure extends Error {
  override readonly name = 'ConformanceFailure'
}

export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ConformanceFailure(message)
}

function acquired(result: ClaimResult, what: string): Claim {
  check(result.status === 'acquired', `${what}: expected 'acquired', got ${JSON.stringify(result)}`)
  return result.claim
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
/**
 * Whether less than `ms` has passed since `since` (Date.now(), taken before the call that started a
 * lease or retention of `ms`): only then must the store still show it live. On a machine too busy
 * to make the next call in time, a check of the live state proves nothing and is not made.
 */
const stillWithin = (since: number, ms: number) => Date.now() - since < ms

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

/** Registers one store test (a new store each, closed after it unless shared). */
export type StoreTest = (title: string, body: (store: DedupStore) => Promise<void>) => void
/** Registers one test of the optional `lookup` (skipped on a store without it). */
export type LookupTest = (
  title: string,
  body: (store: DedupStore, lookup: (key: string) => Promise<DedupKeyState>) => Promise<void>,
) => void

/** The first rules of claim, complete and release: acquiring, in flight, duplicates, fencing. */
export function claimCases(test: StoreTest, { shortMs, newKey }: { shortMs: number; newKey: () => string }): void {
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
}

/** Leases that end, releases, retention, independence and the race for one key. */
export function expiryCases(
  test: StoreTest,
  { concurrency, shortMs, newKey }: { concurrency: number; shortMs: number; newKey: () => string },
): void {
  test('forgets a completed key once its retention expires', async (store) => {
    const key = newKey()
    const claim = acquired(await store.claim(key, LONG), 'first claim')
    const completedAt = Date.now()
    check((await store.complete(claim, { retentionMs: shortMs })) === true, 'complete returns true')
    const retained = await store.claim(key, LONG)
    if (retained.status === 'acquired' && !stillWithin(completedAt, shortMs)) {
      // Too late to look inside the retention: the key was already forgotten, as it should be.
      check(retained.claim.attempt === 1, `a forgotten key starts again at attempt 1, got ${retained.claim.attempt}`)
      return
    }
    check(retained.status === 'duplicate', 'duplicate while retained')
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
}

/** Registers one test of the optional `extend` (skipped on a store without it). */
export type ExtendTest = (
  title: string,
  body: (store: DedupStore, extend: (claim: Claim, leaseMs: number) => Promise<boolean>) => Promise<void>,
) => void

/** What the optional `extend` does: renews only a live lease of its own token, and nothing else. */
export function extendCases(extendTest: ExtendTest, { shortMs, newKey }: { shortMs: number; newKey: () => string }): void {
  extendTest('keeps a live lease past its first end when extended, and the owner still completes', async (store, extend) => {
    const key = newKey()
    const claim = acquired(await store.claim(key, { leaseMs: shortMs, retentionMs: LONG.retentionMs }), 'first claim')
    check((await extend(claim, LONG.leaseMs)) === true, 'extend with the owning token of a live lease returns true')
    await sleep(shortMs + 150)
    const other = await store.claim(key, LONG)
    check(other.status === 'in_flight', `after the first lease would have ended, the key is still in_flight, got ${other.status}`)
    check(
      other.status === 'in_flight' && other.retryAfterMs > shortMs,
      `retryAfterMs is the extended lease left, got ${JSON.stringify(other)}`,
    )
    check((await store.complete(claim, LONG)) === true, 'the owner completes')
  })

  extendTest('extends from now: a lease renewed with a short length ends after it', async (store, extend) => {
    const key = newKey()
    const claim = acquired(await store.claim(key, LONG), 'first claim')
    check((await extend(claim, shortMs)) === true, 'extend returns true')
    await sleep(shortMs + 150)
    const next = acquired(await store.claim(key, LONG), 'claim after the renewed lease ended')
    check(next.attempt === 2, `the next claim is attempt 2, got ${next.attempt}`)
    check((await extend(claim, LONG.leaseMs)) === false, 'the old token cannot extend the new owner’s lease')
    check((await store.claim(key, LONG)).status === 'in_flight', 'the new owner still holds the key')
  })

  extendTest('refuses a forged token, a lapsed lease, a released key and a completed key, changing nothing', async (store, extend) => {
    const key = newKey()
    const claim = acquired(await store.claim(key, LONG), 'first claim')
    for (const token of ['forged', '', crypto.randomUUID()]) {
      check((await extend({ ...claim, token }, LONG.leaseMs)) === false, `extend with token ${JSON.stringify(token)} is refused`)
    }
    check((await store.complete(claim, LONG)) === true, 'the owner completes')
    check((await extend(claim, LONG.leaseMs)) === false, 'a completed key cannot be extended')
    check((await store.claim(key, LONG)).status === 'duplicate', 'and stays a duplicate')

    const released = newKey()
    const held = acquired(await store.claim(released, LONG), 'claim of a second key')
    check((await store.release(held)) === true, 'release returns true')
    check((await extend(held, LONG.leaseMs)) === false, 'a released key cannot be extended')
    check(acquired(await store.claim(released, LONG), 'claim after release').attempt === 2, 'the key is free: attempt 2')

    const lapsed = newKey()
    const short = acquired(await store.claim(lapsed, { leaseMs: shortMs, retentionMs: LONG.retentionMs }), 'claim of a third key')
    await sleep(shortMs + 150)
    check((await extend(short, LONG.leaseMs)) === false, 'a lapsed lease cannot be extended, even before another claim')
    check(acquired(await store.claim(lapsed, LONG), 'claim after the lapse').attempt === 2, 'the lapsed key is free: attempt 2')
  })
}

/** A built-in store refuses durations that are not whole milliseconds ≥ 1 and takes nothing. */
export function durationCase(test: StoreTest, newKey: () => string): void {
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

/** What the optional `lookup` answers in each state of a key. */
export function lookupCases(lookupTest: LookupTest, { shortMs, newKey }: { shortMs: number; newKey: () => string }): void {
  lookupTest("answers 'absent' for a key never claimed, and the read takes nothing", async (store, lookup) => {
    const key = newKey()
    check((await lookup(key)) === 'absent', 'an unknown key is absent')
    check((await lookup(key)) === 'absent', 'and stays absent when read again')
    check(acquired(await store.claim(key, LONG), 'claim after lookup').attempt === 1, 'lookup did not claim: the first claim has attempt 1')
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
    const claimedAt = Date.now()
    acquired(await store.claim(key, { leaseMs: shortMs, retentionMs: LONG.retentionMs }), 'first claim')
    const live = await lookup(key)
    check(live === 'in_flight' || (live === 'absent' && !stillWithin(claimedAt, shortMs)), 'in_flight while the lease is live')
    await sleep(shortMs + 150)
    check((await lookup(key)) === 'absent', 'absent once the lease has expired')
    check(acquired(await store.claim(key, LONG), 'claim after the lease').attempt === 2, 'the next claim is attempt 2')
  })

  lookupTest("answers 'absent' once the retention of a completed key expires", async (store, lookup) => {
    const key = newKey()
    const claim = acquired(await store.claim(key, LONG), 'first claim')
    const completedAt = Date.now()
    check((await store.complete(claim, { retentionMs: shortMs })) === true, 'complete returns true')
    const retained = await lookup(key)
    check(retained === 'done' || (retained === 'absent' && !stillWithin(completedAt, shortMs)), 'done while retained')
    await sleep(shortMs + 150)
    check((await lookup(key)) === 'absent', 'absent once the retention has expired')
  })
}

/** Registers one test of the optional `completedBy` (skipped on a store without it). */
export type CompletedByTest = (
  title: string,
  body: (store: DedupStore, completedBy: (claim: Claim) => Promise<boolean>) => Promise<void>,
) => void

/** What the optional `completedBy` answers: true only for the very claim whose complete recorded the key. */
export function completedByCases(completedByTest: CompletedByTest, { shortMs, newKey }: { shortMs: number; newKey: () => string }): void {
  completedByTest(
    'is true once the claim’s own complete landed, and stays true when the complete is sent again',
    async (store, completedBy) => {
      const key = newKey()
      const claim = acquired(await store.claim(key, LONG), 'first claim')
      check((await completedBy(claim)) === false, 'false while the claim holds the key, not completed')
      check((await store.complete(claim, LONG)) === true, 'the owner completes')
      check((await completedBy(claim)) === true, 'true once its complete landed')
      // A complete resent after its answer was lost: the store answers false, completedBy still tells.
      check((await store.complete(claim, LONG)) === false, 'a second complete of the same claim answers false')
      check((await completedBy(claim)) === true, 'and completedBy still answers true')
      check(
        (await completedBy({ ...claim, token: crypto.randomUUID(), attempt: claim.attempt + 1 })) === false,
        'false for a claim that never was',
      )
    },
  )

  completedByTest(
    'is false for a claim whose lease another claim took over and recorded, and for a released claim',
    async (store, completedBy) => {
      const key = newKey()
      const lapsed = acquired(await store.claim(key, { leaseMs: shortMs, retentionMs: LONG.retentionMs }), 'first claim, short lease')
      await sleep(shortMs + 150)
      const next = acquired(await store.claim(key, LONG), 'claim after the first lease lapsed')
      check((await completedBy(lapsed)) === false, 'false for the lapsed claim while the next one holds the key')
      check((await store.complete(next, LONG)) === true, 'the new owner completes')
      check((await completedBy(next)) === true, 'true for the claim that recorded the key')
      check((await completedBy(lapsed)) === false, 'false for the lapsed claim, whose complete never landed')
      check((await store.complete(lapsed, LONG)) === false, 'whose complete is refused')

      const released = newKey()
      const first = acquired(await store.claim(released, LONG), 'claim of a second key')
      check((await store.release(first)) === true, 'release returns true')
      const second = acquired(await store.claim(released, LONG), 'claim after the release')
      check((await store.complete(second, LONG)) === true, 'the second claim completes')
      check((await completedBy(first)) === false, 'false for the released claim')
      check((await completedBy(second)) === true, 'true for the claim that completed')
    },
  )
}
