/**
 * A store call that hangs (a stalled pooled connection after a failover, a proxy that stops
 * answering) instead of failing: the complete of a handled event belongs to the background
 * recorder once its deadline passes, whether it came in the request or after a handler past its
 * deadline, and the recorder does not wait on the hung call; an email's place in this process is
 * never held past the claim's lease. Two receivers share one store here, as two instances share
 * PostgreSQL or Redis: the sender's retry after the lease reaches the other one.
 */
import { type Claim, type CompleteOptions, createReceiver, type DedupStore, MemoryDedupStore, type Receiver } from '@email-webhooks/core'
import { createEmailSequence, createSignedDelivery, type SignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * One shared memory store seen through a connection whose completes can hang: the next
 * `hangCompletes` of them never answer (a stalled connection), and so does every complete of
 * `hangKey`. A hung call is ended (rejected) only by `unstall()`, after the test, so nothing dangles.
 */
class StallingStore implements DedupStore {
  readonly ordering = true as const
  hangCompletes = 0
  hangKey: string | undefined
  /** The next this many completes land, and then their answer never comes (lost with its connection). */
  landThenHang = 0
  /** The next this many completes land, and answer false (a resend after a reconnect found the key done). */
  landAnswerFalse = 0
  /** Every call but claim fails until then (performance.now()): the store unreachable. */
  downUntil = 0
  /** Once a complete's answer is lost (landThenHang), the store is unreachable this long. */
  downAfterLostMs = 0
  /** The next this many lookups and completedBy calls fail. */
  failQuestions = 0
  completes = 0
  /** Set when the store can tell which claim recorded a key (as PostgreSQL does). */
  completedBy?: (claim: Claim) => Promise<boolean>
  readonly #inner: MemoryDedupStore
  readonly #hung: Array<(error: Error) => void> = []
  constructor(inner: MemoryDedupStore, recorded?: Set<string>) {
    this.#inner = inner
    if (recorded) {
      this.#recorded = recorded
      this.completedBy = async (claim) => {
        this.#check(true)
        return recorded.has(claim.token)
      }
    }
  }
  readonly #recorded: Set<string> | undefined
  claim(...args: Parameters<MemoryDedupStore['claim']>) {
    return this.#inner.claim(...args)
  }
  async complete(claim: Claim, options: CompleteOptions): Promise<boolean> {
    this.completes++
    if (claim.key === this.hangKey || this.hangCompletes > 0) {
      this.hangCompletes = Math.max(0, this.hangCompletes - 1)
      return new Promise((_resolve, reject) => this.#hung.push(reject))
    }
    this.#check(false)
    const landed = await this.#inner.complete(claim, options)
    if (landed) this.#recorded?.add(claim.token)
    if (landed && this.landThenHang > 0) {
      this.landThenHang--
      this.downUntil = performance.now() + this.downAfterLostMs
      return new Promise((_resolve, reject) => this.#hung.push(reject))
    }
    if (landed && this.landAnswerFalse > 0) {
      this.landAnswerFalse--
      return false
    }
    return landed
  }
  release(claim: Claim) {
    return this.#inner.release(claim)
  }
  extend(...args: Parameters<MemoryDedupStore['extend']>) {
    return this.#inner.extend(...args)
  }
  async lookup(key: string) {
    this.#check(true)
    return this.#inner.lookup(key)
  }
  /** Throws as an unreachable store does: while down, or for the next failing question. */
  #check(question: boolean): void {
    if (performance.now() < this.downUntil) throw new Error('connect ECONNREFUSED (test)')
    if (question && this.failQuestions > 0) {
      this.failQuestions--
      throw new Error('connection terminated (test)')
    }
  }
  unstall(): void {
    for (const reject of this.#hung.splice(0)) reject(new Error('connection destroyed (test end)'))
  }
}

const LEASE_MS = 1_500
const stores: StallingStore[] = []
afterEach(() => {
  for (const store of stores.splice(0)) store.unstall()
})

function logger() {
  return { error: vi.fn<(line: string) => void>(), warn: vi.fn<(line: string) => void>() }
}

/** Two receivers (two instances) on one store; each has its own view, `a` of which can stall. */
function twoInstances(
  options: { handlerTimeoutMs?: number; ordering?: boolean; leaseMs?: number; completedBy?: boolean },
  handler: (id: string) => Promise<void>,
) {
  const shared = new MemoryDedupStore()
  const recorded = options.completedBy ? new Set<string>() : undefined
  const a = new StallingStore(shared, recorded)
  const b = new StallingStore(shared, recorded)
  stores.push(a, b)
  const log = logger()
  const build = (store: DedupStore): Receiver =>
    createReceiver({
      secret: TEST_SECRET,
      store,
      logger: log,
      leaseMs: options.leaseMs ?? LEASE_MS,
      storeTimeoutMs: 200,
      handlerTimeoutMs: options.handlerTimeoutMs ?? 1_000,
      ordering: options.ordering ?? false,
      handlers: { 'email.bounced': (event) => handler(event.id), 'email.deferred': (event) => handler(event.id) },
    })
  return { a, b, log, receiverA: build(a), receiverB: build(b) }
}

/** The same event signed again, as the sender's retry carries a fresh timestamp and signature. */
const again = (delivery: SignedDelivery) => createSignedDelivery({ event: delivery.event })

describe('a complete that hangs (a stalled connection)', () => {
  it('is tried again by the recorder while the first try still hangs: the retry after the lease, on another instance, is a duplicate', async () => {
    const runs: string[] = []
    const { a, log, receiverA, receiverB } = twoInstances({}, async (id) => void runs.push(id))
    a.hangCompletes = 1
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = await receiverA.receive(delivery)
    expect(first.status).toBe(503)
    expect(first.code).toBe('store_unavailable')
    // The recorder's own try lands although the first one never answers.
    await vi.waitFor(
      () => expect(log.warn.mock.calls.map(([line]) => line)).toContainEqual(expect.stringMatching(/recorded .* as done after 1 more try/)),
      {
        timeout: LEASE_MS,
      },
    )
    await sleep(LEASE_MS + 100)
    const retry = await receiverB.receive(await again(delivery))
    expect(retry.status).toBe(200)
    expect(JSON.parse(retry.body)).toEqual({ ok: true, duplicate: true })
    expect(runs).toEqual([delivery.event.id])
  })

  it('after a handler past its deadline is raced too and then the recorder’s: the retry after the lease, on another instance, is a duplicate', async () => {
    const runs: string[] = []
    let finish = () => {}
    const { a, log, receiverA, receiverB } = twoInstances({ handlerTimeoutMs: 100 }, async (id) => {
      runs.push(id)
      await new Promise<void>((resolve) => {
        finish = resolve
      })
    })
    a.hangCompletes = 1
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = await receiverA.receive(delivery)
    expect(first.code).toBe('handler_timeout')
    finish()
    await vi.waitFor(
      () => expect(log.warn.mock.calls.map(([line]) => line)).toContainEqual(expect.stringMatching(/recorded .* as done after 1 more try/)),
      {
        timeout: LEASE_MS,
      },
    )
    expect(log.error.mock.calls.map(([line]) => line)).toContainEqual(
      expect.stringMatching(/503 complete failed email\.bounced .*keeps trying.*longer than 200 ms/),
    )
    await sleep(LEASE_MS + 100)
    const retry = await receiverB.receive(await again(delivery))
    expect(JSON.parse(retry.body)).toEqual({ ok: true, duplicate: true })
    expect(runs).toEqual([delivery.event.id])
  })

  it('with ordering on, holds the email in this process no longer than the lease while the late complete keeps hanging: the email’s next event is handled after it', async () => {
    const runs: string[] = []
    let finish = () => {}
    const { a, receiverA } = twoInstances({ handlerTimeoutMs: 100, ordering: true }, async (id) => {
      runs.push(id)
      if (runs.length === 1)
        await new Promise<void>((resolve) => {
          finish = resolve
        })
    })
    const { deliveries } = await createEmailSequence({ types: ['email.deferred', 'email.bounced'] })
    const [older, newer] = deliveries as [SignedDelivery, SignedDelivery]
    // Every complete of the first event hangs: the store never records it while the test lasts.
    a.hangKey = `default:${older.event.id}`
    const started = performance.now()
    expect((await receiverA.receive(older)).code).toBe('handler_timeout')
    finish()
    await vi.waitFor(() => expect(a.completes).toBeGreaterThanOrEqual(1), { timeout: LEASE_MS })
    // Within the lease the email is held (its first event still unsettled); once the lease ended, not any more.
    const during = await receiverA.receive(newer)
    expect(during.status).toBe(409)
    await sleep(Math.max(0, started + LEASE_MS + 100 - performance.now()))
    const after = await receiverA.receive(await again(newer))
    expect(after.status).toBe(200)
    expect(runs).toContain(newer.event.id)
  })
})

describe('a complete that landed while its answer was lost', () => {
  const lines = (mock: ReturnType<typeof logger>['warn']) => mock.mock.calls.map(([line]) => line)

  it('is proved this claim’s own by completedBy past the lease: recorded late, never reported as a possible second run', async () => {
    const runs: string[] = []
    const { a, log, receiverA, receiverB } = twoInstances({ completedBy: true }, async (id) => void runs.push(id))
    // The complete lands and its answer is lost; then the store is unreachable until the lease is over.
    a.landThenHang = 1
    a.downAfterLostMs = LEASE_MS + 300
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = await receiverA.receive(delivery)
    expect(first.code).toBe('store_unavailable')
    await vi.waitFor(() => expect(lines(log.warn)).toContainEqual(expect.stringMatching(/recorded .* as done after \d+ more tr/)), {
      timeout: LEASE_MS + 5_000,
    })
    // Within the lease `lookup` could tell; past it only the claim's own record can.
    expect(performance.now()).toBeGreaterThan(a.downUntil)
    expect(lines(log.error).filter((line) => /could not record|may run a second time|lease_lost/.test(line))).toEqual([])
    const retry = await receiverB.receive(await again(delivery))
    expect(JSON.parse(retry.body)).toEqual({ ok: true, duplicate: true })
    expect(runs).toEqual([delivery.event.id])
  })

  it('is not taken for a refusal when the store does not answer the question: asked again until it does (lookup, within the lease)', async () => {
    const runs: string[] = []
    const { a, log, receiverA, receiverB } = twoInstances({ leaseMs: 30_000 }, async (id) => void runs.push(id))
    // The complete lands and answers false, as a resend after a reconnect does; the next two questions fail.
    a.landAnswerFalse = 1
    a.failQuestions = 2
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = await receiverA.receive(delivery)
    // Before: the first failed lookup counted as "taken over" (answered 409, and logged as a possible second run).
    expect(first.status).toBe(503)
    expect(first.code).toBe('store_unavailable')
    await vi.waitFor(() => expect(lines(log.warn)).toContainEqual(expect.stringMatching(/recorded .* as done after \d+ more tr/)), {
      timeout: 10_000,
    })
    expect(a.failQuestions).toBe(0)
    expect(lines(log.error).filter((line) => /could not record|may run a second time|lease_lost/.test(line))).toEqual([])
    const retry = await receiverB.receive(await again(delivery))
    expect(JSON.parse(retry.body)).toEqual({ ok: true, duplicate: true })
    expect(runs).toEqual([delivery.event.id])
  })
})
