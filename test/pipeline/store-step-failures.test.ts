/**
 * A store step whose failure cannot change the answer any more (the release after a handler
 * threw, the late complete or release of a handler past its deadline) is logged, never dropped:
 * the key then stays claimed until its lease ends, and retries meet 409 until then.
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

  it('logs a late complete that fails after a handler finished past its deadline', async () => {
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
        expect.stringMatching(/^\[@email-webhooks\/core\] 503 complete failed email\.bounced .*disk full \(simulated\)/),
      ),
    )
  })
})
