/**
 * A complete that reached the store, but whose answer did not come back: the store wrote the
 * record and the connection dropped before the reply (a PostgreSQL or Redis restart), or the
 * driver sent the command again after reconnecting and the second execution found the key done
 * (ioredis resends unanswered commands by default, `autoResendUnfulfilledCommands`). Seen in the
 * fault suite: on a Redis restart (SIGTERM, 2 s down, lease 30 s) the receiver logged "could not
 * record … its handler may run a second time" for an event that was recorded and handled once.
 *
 * The event is recorded by this very claim, within its lease, and its handler ran once: the
 * receiver must neither log a possible second run nor answer 409 lease_lost.
 */
import { type Claim, type ClaimOptions, type CompleteOptions, createReceiver, MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { describe, expect, it, vi } from 'vitest'
import { SECOND_RUN_LOG } from './figures.js'

/** A memory store whose first complete lands but whose answer is lost: rejected, or replaced by the answer to a resend. */
class LostReplyStore {
  readonly inner = new MemoryDedupStore()
  #lost = false
  constructor(private readonly mode: 'connection_closed' | 'resent') {}
  claim(key: string, options: ClaimOptions) {
    return this.inner.claim(key, options)
  }
  async complete(claim: Claim, options: CompleteOptions) {
    if (this.#lost) return this.inner.complete(claim, options)
    this.#lost = true
    expect(await this.inner.complete(claim, options)).toBe(true)
    if (this.mode === 'connection_closed') throw new Error('Connection is closed.')
    // The driver sends the same command again after reconnecting: the key is done, no longer leased.
    return this.inner.complete(claim, options)
  }
  release(claim: Claim) {
    return this.inner.release(claim)
  }
  lookup(key: string) {
    return this.inner.lookup(key)
  }
}

function setUp(mode: 'connection_closed' | 'resent') {
  const log = { error: vi.fn<(line: string) => void>(), warn: vi.fn<(line: string) => void>() }
  const runs: string[] = []
  const store = new LostReplyStore(mode)
  const receiver = createReceiver({
    secret: TEST_SECRET,
    store,
    logger: log,
    handlers: { 'email.bounced': (event) => void runs.push(event.id) },
  })
  const lines = () => [...log.error.mock.calls, ...log.warn.mock.calls].map(([line]) => line)
  return { receiver, runs, lines, store }
}

describe('a complete that landed but whose answer was lost', () => {
  it('is not logged as a possible second run when the answer was a dropped connection', async () => {
    const { receiver, runs, lines, store } = setUp('connection_closed')
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = await receiver.receive(delivery)
    // The receiver cannot know the record landed: 503, and it keeps trying in the background.
    expect([first.status, first.code]).toEqual([503, 'store_unavailable'])
    expect(await store.lookup(`default:${delivery.event.id}`)).toBe('done')
    // The background try finds the key done by this claim, within its lease.
    await vi.waitFor(() => expect(lines().some((l) => /recorded|could not record/.test(l))).toBe(true))
    expect(lines().filter((l) => SECOND_RUN_LOG.test(l))).toEqual([])
    const retry = await receiver.receive(await createSignedDelivery({ event: delivery.event }))
    expect([retry.status, retry.body]).toEqual([200, '{"ok":true,"duplicate":true}'])
    expect(runs).toEqual([delivery.event.id])
  })

  it('is not answered 409 lease_lost when a resend of it answered false', async () => {
    const { receiver, runs, lines } = setUp('resent')
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = await receiver.receive(delivery)
    // Recorded by this claim within its lease: a 200 (what a lookup of the key would confirm), not a lost lease.
    expect([first.status, first.code]).toEqual([200, undefined])
    expect(lines().filter((l) => /lease_lost/.test(l))).toEqual([])
    const retry = await receiver.receive(await createSignedDelivery({ event: delivery.event }))
    expect([retry.status, retry.body]).toEqual([200, '{"ok":true,"duplicate":true}'])
    expect(runs).toEqual([delivery.event.id])
  })
})
