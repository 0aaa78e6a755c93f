/**
 * Rule 7 of the ordering capability as conformance cases: one event of an email at a time. An
 * ordered claim holds its email until it completes, is released or its lease ends; meanwhile
 * another event of the email is `in_flight` with reason `order`, after its own `duplicate` and
 * `in_flight` checks, and other emails are not held.
 */
import type { ClaimResult, OrderingDedupStore } from '@email-webhooks/core'
import { check, type Email, sameMark, sleep } from './ordering-email.js'

type Ordered = (title: string, body: (newEmail: () => Email, store: OrderingDedupStore) => Promise<void>) => void

const busy = (result: ClaimResult): boolean => result.status === 'in_flight' && result.reason === 'order'

/** Registers the one-event-of-an-email-at-a-time cases through the suite's `ordered`. */
export function orderLockCases(ordered: Ordered, shortMs: number): void {
  ordered(
    'holds the email while an event is claimed: another event of it is in_flight (reason order) until the first completes, then sees its mark',
    async (newEmail) => {
      const email = newEmail()
      const older = email.step('email.deferred', 0)
      const newer = email.step('email.submitted', 1_000)
      const first = await email.claim(older)
      const second = await email.ask(newer)
      check(busy(second), `a second event of a held email is in_flight with reason 'order', got ${JSON.stringify(second)}`)
      check(second.status === 'in_flight' && second.retryAfterMs > 0, 'with the time left of the holder as retryAfterMs')
      check((await email.complete(first.claim, older)) === true, 'the holder completes')
      const after = await email.claim(newer)
      check(
        after.order.status === 'latest' && sameMark(after.order.newestHandled, older.mark),
        `once the holder completed, the next event is acquired and sees its mark, got ${JSON.stringify(after.order)}`,
      )
      check((await email.complete(after.claim, newer)) === true, 'which completes')
    },
  )

  ordered('frees the email when the holder is released, and when its lease ends', async (newEmail, store) => {
    const email = newEmail()
    const a = email.step('email.queued', 0)
    const b = email.step('email.submitted', 1_000)
    const held = await email.claim(a)
    check(busy(await email.ask(b)), 'held by the first claim')
    check((await store.release(held.claim)) === true, 'the first claim is released')
    const next = await email.claim(b, shortMs)
    check(next.order.status === 'first', `after a release the next event is acquired and sees no mark, got ${next.order.status}`)
    check(busy(await email.ask(a)), 'now held by the second claim')
    await sleep(shortMs + 150)
    const retry = await email.claim(a)
    check(retry.order.status === 'first', 'after the lease of the holder ended, another event of the email is acquired')
    check((await email.complete(retry.claim, a)) === true, 'and completes')
  })

  ordered('keeps the email held past the first lease when the holder extends its claim (a store with extend)', async (newEmail, store) => {
    if (store.extend === undefined) return
    const email = newEmail()
    const a = email.step('email.queued', 0)
    const b = email.step('email.submitted', 1_000)
    const held = await email.claim(a, shortMs)
    check((await store.extend(held.claim, { leaseMs: 60_000 })) === true, 'the holder extends its claim')
    await sleep(shortMs + 150)
    check(busy(await email.ask(b)), 'after the first lease would have ended, the email is still held (in_flight, reason order)')
    check((await email.complete(held.claim, a)) === true, 'the holder completes')
    check((await email.claim(b)).order.status === 'latest', 'then the next event is acquired')
  })

  ordered('answers duplicate and in_flight of an event itself before the order lock, and holds no other email', async (newEmail) => {
    const email = newEmail()
    const done = email.step('email.queued', 0)
    await email.handle(done)
    const holder = email.step('email.submitted', 1_000)
    const held = await email.claim(holder)
    const again = await email.ask(done)
    check(again.status === 'duplicate', `a handled event is a duplicate while its email is held, got ${JSON.stringify(again)}`)
    const itself = await email.ask(holder)
    check(
      itself.status === 'in_flight' && itself.reason === undefined,
      `the holder's own event is in_flight without reason 'order', got ${JSON.stringify(itself)}`,
    )
    const other = newEmail()
    const free = await other.claim(other.step('email.queued', 0))
    check(free.order.status === 'first', 'another email is not held')
    check((await email.complete(held.claim, holder)) === true, 'the holder completes')
  })

  ordered('lets exactly one of many concurrent claims of one email hold it', async (newEmail) => {
    const email = newEmail()
    const steps = Array.from({ length: 8 }, (_, i) => email.step('email.deferred', i * 1000))
    const results = await Promise.all(steps.map((s) => email.ask(s)))
    const acquired = results.filter((result) => result.status === 'acquired')
    check(acquired.length === 1, `one of 8 concurrent claims of one email is acquired, got ${acquired.length}`)
    check(
      results.every((result) => result.status === 'acquired' || busy(result)),
      `the others are in_flight with reason 'order', got ${JSON.stringify(results.filter((r) => r.status !== 'acquired'))}`,
    )
  })
}
