/**
 * The inbox conformance suite: the rules of `InboxQueue` (see its contract) as tests for vitest,
 * jest or node:test, run against `store.inbox`. Real time with short durations: every store keeps
 * its own clock.
 */
import type { DedupStore, InboxQueue } from '@email-webhooks/core'
import type { ConformanceRunner } from './conformance.js'
import { check, item, LONG, sleep, takeKey } from './inbox-conformance-kit.js'
import { type InboxPeerTest, peerCases } from './inbox-conformance-peers.js'

/** Options of {@link inboxConformance}. */
export interface InboxConformanceOptions {
  /** Returns a ready store with an `inbox`; called once per test. Keys are random, so a shared store also works. */
  createStore(): DedupStore | Promise<DedupStore>
  /** Closes the store after each test (default true). */
  closeAfterEach?: boolean
  /** Short lease, retry and retention of the expiry cases; default 300 ms. */
  shortMs?: number
  /**
   * Returns a second store on the same queue as `createStore`'s (another connection, pool or
   * client, as another process opens it), closed like it. With it the suite also checks
   * what a queue shared by processes needs: two stores taking at once never hold one entry (nor
   * two of one order key when ordered), and a lease that lapses under one is taken by the other.
   * Default: none, and those tests are not registered.
   */
  createPeerStore?(): DedupStore | Promise<DedupStore>
}

type InboxTest = (title: string, body: (inbox: InboxQueue) => Promise<void>) => void

/** Registers the inbox conformance tests for a store. @example inboxConformance('my store', { describe, it }, { createStore }) */
export function inboxConformance(name: string, runner: ConformanceRunner, options: InboxConformanceOptions): void {
  const shortMs = options.shortMs ?? 300
  const test: InboxTest = (title, body) =>
    runner.it(title, async () => {
      const store = await options.createStore()
      try {
        check(store.inbox !== undefined, 'the store has an inbox (store.inbox)')
        await body(store.inbox)
      } finally {
        if (options.closeAfterEach ?? true) await store.close?.()
      }
    })
  runner.describe(`Inbox conformance: ${name}`, () => {
    recordCases(test, shortMs)
    leaseCases(test, shortMs)
    orderedCases(test)
    const createPeer = options.createPeerStore
    if (createPeer) peerCases(peerTest(runner, options, createPeer), shortMs)
  })
}

/** Registers a test on a store and its peer, both closed after it (unless `closeAfterEach` is false). */
function peerTest(
  runner: ConformanceRunner,
  options: InboxConformanceOptions,
  createPeer: () => DedupStore | Promise<DedupStore>,
): InboxPeerTest {
  return (title, body) =>
    runner.it(`two stores on one queue: ${title}`, async () => {
      const store = await options.createStore()
      const peer = await Promise.resolve()
        .then(createPeer)
        .catch(async (error: unknown) => {
          await store.close?.()
          throw error
        })
      try {
        check(store.inbox !== undefined && peer.inbox !== undefined, 'both stores have an inbox (store.inbox)')
        await body(store.inbox, peer.inbox)
      } finally {
        if (options.closeAfterEach ?? true) await Promise.all([store.close?.(), peer.close?.()])
      }
    })
}

/** Enqueue, duplicates, retention, dead letters, retry and purge. */
function recordCases(test: InboxTest, shortMs: number): void {
  test('records an entry once: a second enqueue of its key is a duplicate, in every state', async (inbox) => {
    const entry = item()
    check((await inbox.enqueue(entry, LONG)) === 'queued', 'the first enqueue is queued')
    check((await inbox.enqueue(entry, LONG)) === 'duplicate', 'a second enqueue of the key is a duplicate')
    const shown = await inbox.get(entry.key)
    check(shown?.state === 'pending' && shown.attempts === 0, `it is pending with no attempt, got ${JSON.stringify(shown)}`)
    check(
      shown.payload === entry.payload && shown.type === entry.type && shown.timestamp === entry.timestamp,
      'get keeps the item as given',
    )
    const lease = await takeKey(inbox, entry.key)
    check(lease !== undefined, 'it can be taken')
    check((await inbox.enqueue(entry, LONG)) === 'duplicate', 'a duplicate while it runs')
    check((await inbox.finish(lease, { retentionMs: shortMs })) === true, 'the holder finishes it')
    check((await inbox.enqueue(entry, LONG)) === 'duplicate', 'a duplicate once done')
    await sleep(shortMs + 150)
    check((await inbox.enqueue(entry, LONG)) === 'queued', 'queued again once the retention of the done entry ended')
  })

  test('makes a failed entry pending again after retryInMs with the error, and dead when retryInMs is null', async (inbox) => {
    const entry = item()
    await inbox.enqueue(entry, LONG)
    const first = await takeKey(inbox, entry.key)
    check(first?.attempt === 1, `the first take is attempt 1, got ${first?.attempt}`)
    // A retry time long enough for a take past other tests' pending entries and a look, on a loaded machine.
    const retryInMs = shortMs * 4
    check((await inbox.fail(first, { error: 'crm down', retryInMs })) === true, 'the holder fails it')
    check((await takeKey(inbox, entry.key)) === undefined, 'it cannot be taken before its retry time')
    const waiting = await inbox.get(entry.key)
    check(waiting?.state === 'pending' && waiting.lastError === 'crm down', `pending with the last error, got ${JSON.stringify(waiting)}`)
    await sleep(retryInMs + 100)
    const second = await takeKey(inbox, entry.key)
    check(second?.attempt === 2, `after the retry time it is taken again as attempt 2, got ${second?.attempt}`)
    check((await inbox.fail(second, { error: 'still down', retryInMs: null })) === true, 'failing with retryInMs null kills it')
    const dead = await inbox.get(entry.key)
    check(dead?.state === 'dead' && dead.lastError === 'still down' && dead.endedAt !== null, `dead, got ${JSON.stringify(dead)}`)
    check((await takeKey(inbox, entry.key)) === undefined, 'a dead entry is never taken')
    check((await inbox.enqueue(entry, LONG)) === 'duplicate', 'a dead entry still answers duplicate')
    const stats = await inbox.stats()
    check(stats.dead >= 1, `stats count it dead, got ${JSON.stringify(stats)}`)
  })

  test('keeps what a retried entry went through: when it failed, the attempts before the retry, and when it was retried', async (inbox) => {
    const entry = item()
    await inbox.enqueue(entry, LONG)
    const fresh = await inbox.get(entry.key)
    check(
      fresh?.failedAt === null && fresh.retriedAt === null && fresh.attemptsBeforeRetry === 0,
      `a new entry has no history, got ${JSON.stringify(fresh)}`,
    )
    for (let attempt = 1; attempt <= 2; attempt++) {
      const lease = await takeKey(inbox, entry.key)
      check(lease !== undefined, `taken for attempt ${attempt}`)
      check(
        (await inbox.fail(lease, { error: `down ${attempt}`, retryInMs: attempt === 2 ? null : 0 })) === true,
        `attempt ${attempt} fails`,
      )
    }
    const dead = await inbox.get(entry.key)
    check(
      dead?.state === 'dead' && typeof dead.failedAt === 'number' && dead.lastError === 'down 2',
      `dead with its last failure, got ${JSON.stringify(dead)}`,
    )
    check((await inbox.retry([entry.key])) === 1, 'retried')
    const retried = await inbox.get(entry.key)
    check(
      retried?.state === 'pending' && retried.attempts === 0 && retried.attemptsBeforeRetry === 2 && typeof retried.retriedAt === 'number',
      `pending again from zero attempts, the 2 before kept, when it was retried noted, got ${JSON.stringify(retried)}`,
    )
    check(
      (retried.failedAt as number) <= (retried.retriedAt as number) && retried.lastError === 'down 2',
      'its last error is kept, and from before the retry',
    )
    const lease = await takeKey(inbox, entry.key)
    check(lease?.attempt === 1 && (await inbox.finish(lease, LONG)) === true, 'taken as attempt 1 and finished')
    const done = await inbox.get(entry.key)
    check(
      done?.state === 'done' && done.attemptsBeforeRetry === 2 && done.attempts === 1,
      `done, the history kept, got ${JSON.stringify(done)}`,
    )
  })

  test('retries dead entries (attempts from zero) and purges those that ended long enough ago', async (inbox) => {
    const [a, b] = [item(), item()]
    for (const entry of [a, b]) {
      await inbox.enqueue(entry, LONG)
      const lease = await takeKey(inbox, entry.key)
      check(lease !== undefined, 'taken')
      await inbox.fail(lease, { error: 'poison', retryInMs: null })
    }
    check((await inbox.retry([a.key])) === 1, 'retry of one dead key revives one')
    const revived = await inbox.get(a.key)
    check(revived?.state === 'pending' && revived.attempts === 0, `pending with attempts 0, got ${JSON.stringify(revived)}`)
    check((await inbox.retry([a.key])) === 0, 'retry touches only dead entries')
    await inbox.purge({ olderThanMs: 3_600_000 })
    check((await inbox.get(b.key))?.state === 'dead', 'a dead entry that ended within the cut stays')
    await sleep(shortMs)
    check((await inbox.purge({ olderThanMs: Math.floor(shortMs / 2) })) >= 1, 'a dead entry older than the cut is purged')
    check((await inbox.get(b.key)) === undefined, 'the purged entry is gone')
    check((await inbox.get(a.key))?.state === 'pending', 'purge leaves other states alone')
  })
}

/** Leases: exclusive takes, fencing, lapsed leases, defer. */
function leaseCases(test: InboxTest, shortMs: number): void {
  test('fences finish, fail and defer by token and live lease, and takes a lapsed lease again as the next attempt', async (inbox) => {
    const entry = item()
    await inbox.enqueue(entry, LONG)
    // A lease long enough for the takes past other tests' pending entries and the checks below
    // while it is live, on a loaded machine.
    const leaseMs = shortMs * 4
    const lapsed = await takeKey(inbox, entry.key, false, leaseMs)
    check(lapsed !== undefined, 'taken with a short lease')
    const forged = { ...lapsed, token: crypto.randomUUID() }
    check((await inbox.finish(forged, LONG)) === false, 'a forged token cannot finish')
    check((await inbox.fail(forged, { error: 'x', retryInMs: null })) === false, 'a forged token cannot fail')
    check((await inbox.defer(forged, { retryInMs: 0 })) === false, 'a forged token cannot defer')
    check((await inbox.get(entry.key))?.state === 'running', 'still running')
    await sleep(leaseMs + 150)
    check((await inbox.get(entry.key))?.state === 'pending', 'pending again once its lease lapsed')
    check((await inbox.finish(lapsed, LONG)) === false, 'a lapsed lease cannot finish it, even before another take')
    const again = await takeKey(inbox, entry.key)
    check(again?.attempt === 2, `the lapsed entry is taken again as attempt 2, got ${again?.attempt}`)
    check((await inbox.finish(lapsed, LONG)) === false, 'the lapsed holder cannot finish it any more')
    check((await inbox.finish(again, LONG)) === true, 'the new holder finishes it')
  })

  test('renews a held lease from now (a heartbeat), and refuses a forged token, a lapsed lease and a finished entry', async (inbox) => {
    const entry = item()
    await inbox.enqueue(entry, LONG)
    const leaseMs = shortMs * 4
    const lease = await takeKey(inbox, entry.key, false, leaseMs)
    check(lease !== undefined, 'taken with a short lease')
    check((await inbox.renew({ ...lease, token: crypto.randomUUID() }, LONG)) === false, 'a forged token cannot renew')
    check((await inbox.renew(lease, LONG)) === true, 'the holder renews its live lease')
    await sleep(leaseMs + 150)
    check((await inbox.get(entry.key))?.state === 'running', 'still running after the first lease would have ended')
    check((await inbox.renew(lease, { leaseMs })) === true, 'renewed again, now with the short length')
    await sleep(leaseMs + 150)
    check((await inbox.get(entry.key))?.state === 'pending', 'pending again once the renewed lease lapsed')
    check((await inbox.renew(lease, LONG)) === false, 'a lapsed lease cannot be renewed, even before another take')
    const again = await takeKey(inbox, entry.key)
    check(again?.attempt === 2, `taken again as attempt 2, got ${again?.attempt}`)
    check((await inbox.finish(again, LONG)) === true, 'the new holder finishes it')
    check((await inbox.renew(again, LONG)) === false, 'a finished entry cannot be renewed')
  })

  test('gives an attempt back on defer, and never hands one entry to two concurrent takes', async (inbox) => {
    const entry = item()
    await inbox.enqueue(entry, LONG)
    const first = await takeKey(inbox, entry.key)
    check(first !== undefined && (await inbox.defer(first, { retryInMs: 0 })) === true, 'taken and deferred')
    const next = await takeKey(inbox, entry.key)
    check(next?.attempt === 1, `a deferred entry keeps its attempt count, got ${next?.attempt}`)
    await inbox.finish(next, LONG)
    const many = Array.from({ length: 10 }, () => item())
    for (const one of many) await inbox.enqueue(one, LONG)
    const leases = (await Promise.all(Array.from({ length: 30 }, () => inbox.take({ leaseMs: LONG.leaseMs, ordered: false })))).filter(
      (l) => l !== undefined,
    )
    const keys = leases.map((lease) => lease.key)
    check(new Set(keys).size === keys.length, `no entry was handed to two takes: ${keys.length} leases, ${new Set(keys).size} keys`)
    for (const one of many) check(keys.includes(one.key), 'every entry was taken once')
    for (const lease of leases) await inbox.finish(lease, LONG)
  })
}

/** Ordered takes: one entry of an order key at a time, oldest first. */
function orderedCases(test: InboxTest): void {
  test('takes the entries of one order key oldest first and one at a time when ordered', async (inbox) => {
    const orderKey = `conformance:email:${crypto.randomUUID()}`
    const newer = item({ orderKey, createdAtMs: 2_000 })
    const older = item({ orderKey, createdAtMs: 1_000 })
    await inbox.enqueue(newer, LONG)
    await inbox.enqueue(older, LONG)
    check((await takeKey(inbox, newer.key, true)) === undefined, 'the newer entry waits while an older one of its key is pending')
    const first = await takeKey(inbox, older.key, true)
    check(first !== undefined, 'the older one is taken first')
    check((await takeKey(inbox, newer.key, true)) === undefined, 'the newer one waits while the older one runs')
    check((await inbox.finish(first, LONG)) === true, 'the older one finishes')
    const second = await takeKey(inbox, newer.key, true)
    check(second !== undefined, 'then the newer one is taken')
    await inbox.finish(second, LONG)
    const unordered = [item({ orderKey, createdAtMs: 4_000 }), item({ orderKey, createdAtMs: 3_000 })]
    for (const entry of unordered) await inbox.enqueue(entry, LONG)
    const a = await takeKey(inbox, unordered[0]?.key as string, false)
    check(a !== undefined, 'without ordered, order keys do not hold entries back')
    await inbox.finish(a, LONG)
    const b = await takeKey(inbox, unordered[1]?.key as string, false)
    if (b) await inbox.finish(b, LONG)
  })

  test('takes ordered the due head of another email past entries blocked behind a head that waits for its retry', async (inbox) => {
    const blockedKey = `conformance:email:${crypto.randomUUID()}`
    const head = item({ orderKey: blockedKey, createdAtMs: 1_000 })
    const behind = Array.from({ length: 20 }, (_, i) => item({ orderKey: blockedKey, createdAtMs: 2_000 + i }))
    await inbox.enqueue(head, LONG)
    const headLease = await takeKey(inbox, head.key, true)
    check(headLease !== undefined, 'the head is taken, ordered')
    check((await inbox.fail(headLease, { error: 'down', retryInMs: 60_000 })) === true, 'its attempt fails: it waits a minute')
    for (const one of behind) await inbox.enqueue(one, LONG)
    const free = item({ orderKey: `conformance:email:${crypto.randomUUID()}`, createdAtMs: 5_000 })
    await inbox.enqueue(free, LONG)
    const taken = await takeKey(inbox, free.key, true)
    check(taken?.key === free.key, `the other email's head is taken while the blocked ones wait, got ${taken?.key}`)
    for (const one of behind) check((await inbox.get(one.key))?.state === 'pending', 'the entries behind the waiting head stay pending')
    check((await inbox.finish(taken, LONG)) === true, 'and it finishes')
  })

  test('counts pending, running and dead entries, with the time of the oldest pending', async (inbox) => {
    const before = await inbox.stats()
    const entries = [item(), item(), item()]
    for (const entry of entries) await inbox.enqueue(entry, LONG)
    const running = await takeKey(inbox, entries[0]?.key as string)
    const dead = await takeKey(inbox, entries[1]?.key as string)
    check(running !== undefined && dead !== undefined, 'taken')
    await inbox.fail(dead, { error: 'poison', retryInMs: null })
    const after = await inbox.stats()
    check(after.running - before.running === 1, `one more running, got ${JSON.stringify(after)}`)
    check(after.dead - before.dead === 1, `one more dead, got ${JSON.stringify(after)}`)
    check(after.pending - before.pending === 1, `one more pending, got ${JSON.stringify(after)}`)
    check(after.oldestPendingAt !== null && after.oldestPendingAt <= Date.now() + 1_000, 'the oldest pending entry has a time')
    await inbox.finish(running, LONG)
  })
}
