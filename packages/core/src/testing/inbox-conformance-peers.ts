/**
 * The inbox conformance cases of a queue shared by processes: two stores on the same data (as two
 * processes would open it) take at once, and see each other's leases lapse. Registered by
 * `inboxConformance` when it is given `createPeerStore`.
 */
import type { InboxItem, InboxLease, InboxQueue } from '@email-webhooks/core'
import { check, item, LONG, sleep, takeKey } from './inbox-conformance-kit.js'

/** Registers one test on two stores of one queue: `a` and its peer `b`. */
export type InboxPeerTest = (title: string, body: (a: InboxQueue, b: InboxQueue) => Promise<void>) => void

/** Concurrent takes, `rounds` from each of the two inboxes, interleaved; the leases they got. */
async function takeFromBoth(a: InboxQueue, b: InboxQueue, rounds: number, ordered: boolean): Promise<InboxLease[]> {
  const takes: Promise<InboxLease | undefined>[] = []
  for (let i = 0; i < rounds; i++) {
    takes.push(a.take({ leaseMs: LONG.leaseMs, ordered }), b.take({ leaseMs: LONG.leaseMs, ordered }))
  }
  return (await Promise.all(takes)).filter((lease) => lease !== undefined)
}

/** Gives back at once the leases of other tests' entries (a shared store); returns those of `ours`. */
async function keepOurs(inbox: InboxQueue, leases: InboxLease[], ours: InboxItem[]): Promise<InboxLease[]> {
  const keys = new Set(ours.map((one) => one.key))
  for (const lease of leases) if (!keys.has(lease.key)) await inbox.defer(lease, { retryInMs: 0 })
  return leases.filter((lease) => keys.has(lease.key))
}

/** Finishes an entry a round could not judge (its lease may have lapsed and been taken again), leaving nothing running. */
async function settle(a: InboxQueue, b: InboxQueue, first: InboxLease, meanwhile: InboxLease | undefined): Promise<void> {
  if (meanwhile !== undefined) {
    await b.finish(meanwhile, LONG)
    return
  }
  if (await a.finish(first, LONG)) return
  const again = await takeKey(b, first.key)
  if (again !== undefined) await b.finish(again, LONG)
}

/** The cases. */
export function peerCases(test: InboxPeerTest, shortMs: number): void {
  test('never hands one entry to two stores taking from one queue at once', async (a, b) => {
    const many = Array.from({ length: 12 }, () => item())
    for (const [i, one] of many.entries()) check((await (i % 2 ? b : a).enqueue(one, LONG)) === 'queued', 'queued through either store')
    const leases = await keepOurs(a, await takeFromBoth(a, b, 20, false), many)
    const keys = leases.map((lease) => lease.key)
    check(new Set(keys).size === keys.length, `no entry was handed out twice: ${keys.length} leases, ${new Set(keys).size} keys`)
    for (const one of many) check(keys.includes(one.key), 'every entry was taken once, through one store or the other')
    // The token is the lease, whichever store took it.
    for (const [i, lease] of leases.entries()) check((await (i % 2 ? a : b).finish(lease, LONG)) === true, 'finished through either store')
    for (const one of many) check((await a.enqueue(one, LONG)) === 'duplicate', 'a finished entry is a duplicate through either store')
  })

  test('runs one entry of an order key at a time, oldest first, when two stores take ordered at once', async (a, b) => {
    const orderKey = `conformance:email:${crypto.randomUUID()}`
    const entries = [4_000, 1_000, 3_000, 2_000].map((createdAtMs) => item({ orderKey, createdAtMs }))
    for (const [i, one] of entries.entries()) await (i % 2 ? b : a).enqueue(one, LONG)
    for (const createdAtMs of [1_000, 2_000, 3_000, 4_000]) {
      const leases = await keepOurs(a, await takeFromBoth(a, b, 5, true), entries)
      check(leases.length === 1, `one entry of the order key at a time, got ${leases.length}`)
      const [lease] = leases as [InboxLease]
      check(lease.item.createdAtMs === createdAtMs, `oldest first: expected created_at ${createdAtMs}, got ${lease.item.createdAtMs}`)
      check(
        (await takeFromBoth(a, b, 2, true).then((more) => keepOurs(a, more, entries))).length === 0,
        'nothing more of the key while it runs',
      )
      check((await b.finish(lease, LONG)) === true, 'the holder finishes it')
    }
  })

  test('takes an entry whose lease lapsed under one store through the other, as the next attempt', async (a, b) => {
    // Both stores connected first (a server store connects on first use).
    await Promise.all([a.stats(), b.stats()])
    // A lease long enough for the other store's look while it is live: shortMs × 4, doubled (at
    // most twice) when that look took longer than the lease on a busy machine, which then cannot tell.
    for (let leaseMs = shortMs * 4, tries = 1; ; leaseMs *= 2, tries++) {
      const entry = item()
      await a.enqueue(entry, LONG)
      const takenBy = performance.now()
      const first = await takeKey(a, entry.key, false, leaseMs)
      check(first?.attempt === 1, 'taken through one store with a short lease')
      const meanwhile = await takeKey(b, entry.key)
      const seen = (await b.get(entry.key))?.state
      if (performance.now() - takenBy >= leaseMs && tries < 3) {
        // Too slow to judge: the lease may have lapsed while the other store looked. Done with this entry, again.
        await settle(a, b, first, meanwhile)
        continue
      }
      check(meanwhile === undefined, 'the other store cannot take it while the lease is live')
      check(seen === 'running', 'the other store sees it running')
      await sleep(leaseMs + 150)
      check((await b.get(entry.key))?.state === 'pending', 'the other store sees it pending once the lease lapsed')
      const second = await takeKey(b, entry.key)
      check(second?.attempt === 2, `the other store takes it as attempt 2, got ${second?.attempt}`)
      check((await a.finish(first, LONG)) === false, 'the lapsed holder cannot finish it')
      check((await a.defer(first, { retryInMs: 0 })) === false, 'nor defer it')
      check((await a.finish(second, LONG)) === true, 'the new lease finishes it, through either store')
      check((await b.get(entry.key))?.state === 'done', 'done for both')
      return
    }
  })
}
