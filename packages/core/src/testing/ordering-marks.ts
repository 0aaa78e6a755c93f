/**
 * The mark rules of the ordering capability as conformance cases: the mark a claim reads, how a
 * complete advances it, ties, crashes, forged tokens, races of completes, retention.
 */
import { type Claim, compareEventIds, compareOrderPositions, type EventOrder, type OrderingDedupStore } from '@email-webhooks/core'
import { check, type Email, LONG, type Step, sameMark, show, sleep } from './ordering-email.js'

type Ordered = (title: string, body: (newEmail: () => Email, store: OrderingDedupStore) => Promise<void>) => void

/** The mark a claim reads and how completes advance it: first, latest, stale, ties, claim time, crashes, forged tokens. */
export function orderMarkCases(ordered: Ordered): void {
  ordered('reports no mark (first) for an email never completed', async (newEmail) => {
    const email = newEmail()
    const { order } = await email.claim(email.step('email.queued', 0))
    check(order.status === 'first' && order.newestHandled === null, `first event: status first, got ${JSON.stringify(order)}`)
  })

  ordered('keeps the newest completed event as the mark, with its exact time, id and type', async (newEmail) => {
    const email = newEmail()
    const queued = email.step('email.queued', 0)
    const submitted = email.step('email.submitted', 1_001)
    await email.handle(queued)
    const order = await email.handle(submitted)
    check(
      order.status === 'latest' && sameMark(order.newestHandled, queued.mark),
      `newer event: latest over queued, got ${JSON.stringify(order)}`,
    )
    await email.expectMark(submitted.mark, 'after queued then submitted')
  })

  ordered('reports an older event arriving after a newer one as stale and keeps the newer mark', async (newEmail) => {
    const email = newEmail()
    const deferred = email.step('email.deferred', 0)
    const submitted = email.step('email.submitted', 5_000)
    await email.handle(submitted)
    const order = await email.handle(deferred)
    check(order.status === 'stale', `late older event: stale, got ${order.status}`)
    check(sameMark(order.newestHandled, submitted.mark), `stale names the newest handled, got ${show(order.newestHandled)}`)
    await email.expectMark(submitted.mark, 'after the late older event completed')
  })

  ordered('breaks a tie of equal created_at by event id in byte order, in both completion orders', async (newEmail) => {
    const uuid = crypto.randomUUID()
    const pairs: Array<[string, string]> = [
      [crypto.randomUUID(), crypto.randomUUID()].sort(compareEventIds) as [string, string],
      // Byte order puts 'Z' (0x5A) before 'a' (0x61); a locale collation would not (SQL columns need COLLATE "C", Lua a byte loop).
      [`Z${uuid}`, `a${uuid}`],
      [`${uuid}`, `${uuid}-1`],
    ]
    for (const [low, high] of pairs) {
      const first = newEmail()
      await first.handle(first.step('email.deferred', 0, high))
      const late = await first.handle(first.step('email.submitted', 0, low))
      check(late.status === 'stale', `same ms, id ${low} after ${high}: stale, got ${late.status}`)
      await first.expectMark(first.step('email.deferred', 0, high).mark, `${high} completed first`)
      const second = newEmail()
      await second.handle(second.step('email.submitted', 0, low))
      const next = await second.handle(second.step('email.deferred', 0, high))
      check(next.status === 'latest', `same ms, id ${high} after ${low}: latest, got ${next.status}`)
      await second.expectMark(second.step('email.deferred', 0, high).mark, `${low} completed first`)
    }
  })

  ordered('never moves the mark at claim time', async (newEmail, store) => {
    const email = newEmail()
    const queued = email.step('email.queued', 0)
    await email.handle(queued)
    const newer = email.step('email.submitted', 1_000)
    const held = await email.claim(newer)
    check(
      sameMark(held.order.newestHandled, queued.mark),
      `the claim of a newer event reads the old mark, got ${JSON.stringify(held.order)}`,
    )
    check((await store.release(held.claim)) === true, 'the claim is released')
    await email.expectMark(queued.mark, 'after a newer event was claimed and released')
    const { claim } = await email.claim(newer)
    check((await email.complete(claim, newer)) === true, 'the newer event completes')
    await email.expectMark(newer.mark, 'once it completed')
  })
}

/** A crash, forged tokens, races of completes and many events of one email at once. */
export function orderRaceCases(ordered: Ordered, shortMs: number, rounds: number): void {
  ordered('leaves the mark unchanged after a crash between claim and complete', async (newEmail) => {
    const email = newEmail()
    const queued = email.step('email.queued', 0)
    await email.handle(queued)
    const submitted = email.step('email.submitted', 1_000)
    const crashed = await email.claim(submitted, shortMs)
    await sleep(shortMs + 150)
    await email.expectMark(queued.mark, 'after the lease of the crashed claim lapsed')
    const retry = await email.claim(submitted)
    check(
      retry.order.status === 'latest' && sameMark(retry.order.newestHandled, queued.mark),
      `the retry sees the old mark, got ${JSON.stringify(retry.order)}`,
    )
    check((await email.complete(crashed.claim, submitted)) === false, 'the crashed claim cannot complete after the takeover')
    check((await email.complete(retry.claim, submitted)) === true, 'the retry completes (the refused complete freed nothing of it)')
    await email.expectMark(submitted.mark, 'after the retry completed')
  })

  ordered('leaves the mark unchanged after a release or a complete with a forged token', async (newEmail, store) => {
    const email = newEmail()
    const queued = email.step('email.queued', 0)
    await email.handle(queued)
    const released = email.step('email.submitted', 1_000)
    const held = await email.claim(released)
    check((await store.release(held.claim)) === true, 'release returns true')
    await email.expectMark(queued.mark, 'after a release')
    const forged = email.step('email.rejected', 2_000)
    const owner = await email.claim(forged)
    check((await email.complete({ ...owner.claim, token: crypto.randomUUID() }, forged)) === false, 'a forged token cannot complete')
    check((await store.release({ ...owner.claim, token: crypto.randomUUID() })) === false, 'a forged token cannot release')
    const other = await email.ask(email.step('email.deferred', 3_000))
    check(other.status === 'in_flight', `the forged calls freed nothing: the email is still held, got ${JSON.stringify(other)}`)
    check((await store.release(owner.claim)) === true, 'the owner releases')
    await email.expectMark(queued.mark, 'after a refused complete')
  })

  ordered(`leaves the newer event as the mark when the completes of two events of one email race (${rounds} rounds)`, async (newEmail) => {
    // A claim whose lease lapsed can still complete while the next event of the email holds it:
    // each round's older event is claimed with a short lease, all at once, and left to lapse.
    const emails = Array.from({ length: rounds }, () => newEmail())
    const olders = emails.map((email) => email.step('email.deferred', 0))
    const lapsed = await Promise.all(emails.map((email, round) => email.claim(olders[round] as Step, shortMs)))
    await sleep(shortMs + 50)
    for (let round = 0; round < rounds; round++) {
      const email = emails[round] as Email
      const older = olders[round] as Step
      const newer = email.step('email.submitted', round % 4 === 3 ? 0 : 1 + round)
      const [winner, loser] = compareOrderPositions(newer.mark, older.mark) > 0 ? [newer, older] : [older, newer]
      const a = lapsed[round] as { claim: Claim; order: EventOrder }
      const b = await email.claim(newer)
      check(a.order.status === 'first' && b.order.status === 'first', `round ${round}: neither claim sees a mark`)
      const pairs: Array<[Claim, Step]> = [
        [a.claim, older],
        [b.claim, newer],
      ]
      if (round % 2 === 1) pairs.reverse()
      const done = await Promise.all(pairs.map(([c, s]) => email.complete(c, s)))
      check(done.every(Boolean), `round ${round}: both completes return true`)
      await email.expectMark(winner.mark, `round ${round}: after the race (the older was ${show(loser.mark)})`)
    }
  })

  ordered('keeps the newest of many concurrent events of one email as the mark', async (newEmail) => {
    for (let round = 0; round < Math.max(1, Math.floor(rounds / 4)); round++) {
      const email = newEmail()
      const steps = Array.from({ length: 8 }, (_, i) =>
        email.step(i % 2 ? 'email.deferred' : 'email.submitted', ((i * 7 + round * 3) % 4) * 1000),
      )
      await Promise.all(steps.map((s) => email.handle(s)))
      const newest = steps.reduce((best, s) => (compareOrderPositions(s.mark, best.mark) > 0 ? s : best))
      await email.expectMark(newest.mark, `round ${round}: after 8 concurrent events`)
    }
  })
}

/** Marks of separate emails apart from each other and from dedup keys, and how long a mark lasts. */
export function orderKeepCases(ordered: Ordered, shortMs: number): void {
  ordered('keeps the marks of different emails apart, and apart from dedup keys', async (newEmail, store) => {
    const one = newEmail()
    const two = newEmail()
    const a = one.step('email.submitted', 5_000)
    await one.handle(a)
    await two.expectMark(null, 'another email')
    const b = two.step('email.queued', 0)
    await two.handle(b)
    await one.expectMark(a.mark, 'the first email after the second one completed')
    await two.expectMark(b.mark, 'the second email')
    const asDedupKey = (await store.claim(a.markKey, LONG)).status
    check(asDedupKey === 'acquired', `a mark key is not a dedup key: claiming it is acquired, got ${asDedupKey}`)
  })

  ordered('forgets a mark after its retention, and every complete refreshes it', async (newEmail) => {
    const email = newEmail()
    const newer = email.step('email.submitted', 5_000)
    const { claim } = await email.claim(newer)
    check((await email.complete(claim, newer, shortMs)) === true, 'complete with a short retention')
    await email.expectMark(newer.mark, 'while retained')
    await sleep(shortMs + 150)
    await email.expectMark(null, 'after the retention lapsed')
    const kept = newEmail()
    const last = kept.step('email.submitted', 5_000)
    // A retention long enough for the claim and complete below while it lasts, on a loaded machine.
    const keptMs = shortMs * 4
    const { claim: c1 } = await kept.claim(last)
    check((await kept.complete(c1, last, keptMs)) === true, 'the newer completes with a short retention')
    const older = kept.step('email.deferred', 0)
    const { claim: c2 } = await kept.claim(older)
    check((await kept.complete(c2, older, LONG.retentionMs)) === true, 'the older completes with a long retention')
    await sleep(keptMs + 150)
    await kept.expectMark(last.mark, 'after the short retention, refreshed by the later complete of an older event')
  })
}
