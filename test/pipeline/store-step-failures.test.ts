/**
 * A store step whose failure cannot change the answer any more (the release after a handler
 * threw, the late complete or release of a handler past its deadline) is logged, never dropped:
 * the key then stays claimed until its lease ends, and retries meet 409 until then. A complete
 * that fails after the handler succeeded is tried again in the background, never released: the
 * handler does not run a second time, even when the lease ends while the store is down.
 */
import { type ClaimOptions, createReceiver, MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { describe, expect, it, vi } from 'vitest'

/** A memory store whose complete or release fails; not the receiver's own class, so it gets store deadlines. */
class FailingStore {
  readonly #inner = new MemoryDedupStore()
  constructor(private readonly failing: 'complete' | 'release') {}
  claim(key: string, options: ClaimOptions) {
    return this.#inner.claim(key, options)
  }
  complete(...args: Parameters<MemoryDedupStore['complete']>) {
    return this.failing === 'complete' ? Promise.reject(new Error('disk full (simulated)')) : this.#inner.complete(...args)
  }
  release(...args: Parameters<MemoryDedupStore['release']>) {
    return this.failing === 'release' ? Promise.reject(new Error('connection lost (simulated)')) : this.#inner.release(...args)
  }
}

function logger() {
  return { error: vi.fn<(line: string) => void>(), warn: vi.fn<(line: string) => void>() }
}

describe('store steps that fail after the answer is decided', () => {
  it('logs a release that fails after the handler threw; the answer stays 500 handler_failed', async () => {
    const log = logger()
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new FailingStore('release'),
      logger: log,
      handlers: {
        'email.bounced': () => {
          throw new Error('boom')
        },
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const answer = await receiver.receive(delivery)
    expect(answer.status).toBe(500)
    expect(answer.code).toBe('handler_failed')
    // The answer says what happened: not "released", and when the event runs again.
    const { message } = JSON.parse(answer.body).error
    expect(message).not.toMatch(/event was released/)
    expect(message).toMatch(/releasing the event failed too, so .*409 in_flight until its lease ends \(leaseMs, 30000 ms\)/)
    const lines = log.error.mock.calls.map(([line]) => line)
    expect(lines).toContainEqual(
      expect.stringMatching(/^\[@email-webhooks\/core\] 500 release failed email\.bounced .*stays claimed.*connection lost \(simulated\)/),
    )
  })

  it('logs a late complete that fails after a handler finished past its deadline, and keeps trying it', async () => {
    const log = logger()
    let finish = () => {}
    const finished = new Promise<void>((resolve) => {
      finish = resolve
    })
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new FailingStore('complete'),
      logger: log,
      handlerTimeoutMs: 50,
      leaseMs: 5_000,
      handlers: { 'email.bounced': () => finished },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const answer = await receiver.receive(delivery)
    expect(answer.code).toBe('handler_timeout')
    finish()
    await vi.waitFor(() =>
      expect(log.error.mock.calls.map(([line]) => line)).toContainEqual(
        expect.stringMatching(/^\[@email-webhooks\/core\] 503 complete failed email\.bounced .*keeps trying .*disk full \(simulated\)/),
      ),
    )
    // Not released: the retry meets the held event (409), and the handler does not run twice.
    const retry = await receiver.receive(await createSignedDelivery({ event: delivery.event }))
    expect([retry.status, retry.code]).toEqual([409, 'in_flight'])
  })

  it('records an event whose complete failed with the claim of a retry that acquired it after the lease ended, without running the handler again', async () => {
    const log = logger()
    const store = new FlakyCompletes()
    let runs = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      logger: log,
      leaseMs: 300,
      handlerTimeoutMs: 200,
      handlers: { 'email.bounced': () => void runs++ },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    store.failing = true
    const first = await receiver.receive(delivery)
    expect([first.status, first.code]).toEqual([503, 'store_unavailable'])
    // The lease ends while the completes of that claim keep failing; the retry acquires the event.
    await new Promise((resolve) => setTimeout(resolve, 450))
    store.failing = false
    const retry = await receiver.receive(await createSignedDelivery({ event: delivery.event }))
    expect([retry.status, retry.body]).toEqual([200, '{"ok":true,"duplicate":true}'])
    expect(runs).toBe(1)
    expect(await store.lookup(`default:${delivery.event.id}`)).toBe('done')
    const again = await receiver.receive(await createSignedDelivery({ event: delivery.event }))
    expect([again.status, again.body]).toEqual([200, '{"ok":true,"duplicate":true}'])
    expect(runs).toBe(1)
  })

  it('logs once when a complete tried again lands, and when the store refuses it because another request took the event over', async () => {
    const log = logger()
    const store = new FlakyCompletes()
    const receiver = createReceiver({ secret: TEST_SECRET, store, logger: log, leaseMs: 300, handlerTimeoutMs: 200, handlers: {} })
    const landed = await createSignedDelivery({ type: 'email.bounced' })
    store.failing = true
    expect((await receiver.receive(landed)).status).toBe(503)
    store.failing = false
    store.heal()
    await vi.waitFor(
      () =>
        expect(log.warn.mock.calls.map(([line]) => line)).toContainEqual(
          expect.stringMatching(
            new RegExp(`^\\[@email-webhooks/core\\] recorded email\\.bounced ${landed.event.id} as done after \\d+ more tr`),
          ),
        ),
      { timeout: 5_000 },
    )
    // Taken over elsewhere: another "instance" (a second receiver on the same store) acquires the
    // event once the lease ended while this one's completes kept failing.
    const taken = await createSignedDelivery({ type: 'email.bounced' })
    store.failing = true
    expect((await receiver.receive(taken)).status).toBe(503)
    await new Promise((resolve) => setTimeout(resolve, 350))
    store.failing = false
    const other = createReceiver({ secret: TEST_SECRET, store, logger: false, handlers: {} })
    expect((await other.receive(await createSignedDelivery({ event: taken.event }))).status).toBe(200)
    store.heal()
    await vi.waitFor(
      () =>
        expect(log.error.mock.calls.map(([line]) => line)).toContainEqual(
          expect.stringMatching(new RegExp(`could not record email\\.bounced ${taken.event.id} as done: .*may run a second time`)),
        ),
      { timeout: 5_000 },
    )
  })
})

/** A memory store where the completes of claims made while `failing` fail, until `heal()`. */
class FlakyCompletes {
  readonly #inner = new MemoryDedupStore()
  readonly #cursed = new Set<string>()
  failing = false
  async claim(key: string, options: ClaimOptions) {
    const result = await this.#inner.claim(key, options)
    if (this.failing && result.status === 'acquired') this.#cursed.add(result.claim.token)
    return result
  }
  complete(...args: Parameters<MemoryDedupStore['complete']>) {
    if (this.#cursed.has(args[0].token)) return Promise.reject(new Error('connection refused (simulated)'))
    return this.#inner.complete(...args)
  }
  release(...args: Parameters<MemoryDedupStore['release']>) {
    return this.#inner.release(...args)
  }
  lookup(key: string) {
    return this.#inner.lookup(key)
  }
  heal() {
    this.#cursed.clear()
  }
}
