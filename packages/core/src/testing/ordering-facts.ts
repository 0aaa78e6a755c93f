/**
 * Facts as conformance cases (ordering stores that keep them, for reconcile): an ordered claim with
 * `order.fact` reads the fact's counts, a complete with `factChange` adds to them in the same atomic
 * step as marking the event done; a refused complete or a release changes nothing; `reconciled`
 * never goes below 0; a fact lasts `retentionMs` after its last change.
 */
import type { DedupStore, FactCounts, OrderingDedupStore } from '@email-webhooks/core'
import { check, type Email, type Step, sleep } from './ordering-email.js'

type Ordered = (title: string, body: (newEmail: () => Email, store: OrderingDedupStore) => Promise<void>) => void

const same = (a: FactCounts | undefined, b: FactCounts) => a !== undefined && a.handled === b.handled && a.reconciled === b.reconciled
const show = (counts: FactCounts | undefined) =>
  counts ? `{ handled: ${counts.handled}, reconciled: ${counts.reconciled} }` : String(counts)

/** The counts a fresh claim of another event with `s`'s fact reads (the probe is released). */
async function countsOf(email: Email, store: DedupStore, s: Step): Promise<FactCounts | undefined> {
  const [type = '', ms = '0'] = s.fact.split('|')
  const probe = email.step(type, Number(ms) - Date.UTC(2026, 0, 1, 12))
  const result = await email.ask(probe)
  check(result.status === 'acquired', `a probe claim of the fact is acquired, got ${JSON.stringify(result)}`)
  await store.release(result.claim)
  return result.order?.fact
}

async function expectCounts(email: Email, store: DedupStore, s: Step, expected: FactCounts, what: string): Promise<void> {
  const counts = await countsOf(email, store, s)
  check(same(counts, expected), `${what}: the fact ${s.fact} counts ${show(expected)}, got ${show(counts)}`)
}

/** Registers the fact cases through the suite's `ordered`. */
export function orderFactCases(ordered: Ordered, shortMs: number): void {
  ordered('counts facts: a claim reads its fact (zeros at first), a complete with factChange adds to it', async (newEmail, store) => {
    const email = newEmail()
    const first = email.step('email.recipient_accepted', 1_000)
    const { claim } = await email.claim(first)
    await store.release(claim)
    await expectCounts(email, store, first, { handled: 0, reconciled: 0 }, 'before any complete')
    const held = await email.claim(first)
    check((await email.complete(held.claim, first, undefined, { handled: 1, reconciled: 1 })) === true, 'the complete lands')
    await expectCounts(email, store, first, { handled: 1, reconciled: 1 }, 'after one complete')
    const second = email.step('email.recipient_accepted', 1_000)
    const next = await email.ask(second)
    check(next.status === 'acquired', `a second event of the fact is acquired, got ${JSON.stringify(next)}`)
    check(same(next.order?.fact, { handled: 1, reconciled: 1 }), `its claim reads the counts, got ${show(next.order?.fact)}`)
    check((await email.complete(next.claim, second, undefined, { handled: 1, reconciled: -1 })) === true, 'a second complete lands')
    await expectCounts(email, store, first, { handled: 2, reconciled: 0 }, 'after a second event of the same type and millisecond')
    await expectCounts(email, store, email.step('email.recipient_accepted', 2_000), { handled: 0, reconciled: 0 }, 'another millisecond')
    await expectCounts(email, store, email.step('email.bounced', 1_000), { handled: 0, reconciled: 0 }, 'another type')
  })

  ordered('changes no fact on a refused complete or a release, and never counts reconciled below 0', async (newEmail, store) => {
    const email = newEmail()
    const event = email.step('email.bounced', 0)
    const owner = await email.claim(event)
    const forged = { ...owner.claim, token: crypto.randomUUID() }
    check((await email.complete(forged, event, undefined, { handled: 1, reconciled: 1 })) === false, 'a forged token cannot complete')
    check((await store.release(owner.claim)) === true, 'the owner releases')
    await expectCounts(email, store, event, { handled: 0, reconciled: 0 }, 'after a refused complete and a release')
    const again = await email.claim(event)
    check((await email.complete(again.claim, event, undefined, { handled: 0, reconciled: -1 })) === true, 'the complete lands')
    await expectCounts(email, store, event, { handled: 0, reconciled: 0 }, 'after taking one off a reconciled count of 0')
  })

  ordered('forgets a fact after its retention', async (newEmail, store) => {
    const email = newEmail()
    const event = email.step('email.complained', 0)
    const held = await email.claim(event)
    check((await email.complete(held.claim, event, shortMs, { handled: 1, reconciled: 0 })) === true, 'the complete lands')
    await sleep(shortMs + 150)
    await expectCounts(email, store, event, { handled: 0, reconciled: 0 }, 'after the retention lapsed')
  })
}
