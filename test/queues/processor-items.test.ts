/**
 * createInboxProcessor checks each queued item before it claims anything: its key must be
 * `<namespace>:<event id>` of the processor's namespace and its payload that event's envelope.
 * An item that fails either check can never be processed, so it throws InboxItemError (not
 * retryable), says what to fix, and runs no handler; a key of another namespace of the same
 * length is not handled under the wrong one.
 */
import { createInboxProcessor, type InboxItem, InboxItemError, MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery } from '@email-webhooks/core/testing'
import { describe, expect, it, vi } from 'vitest'

async function itemOf(namespace: string): Promise<InboxItem> {
  const { event, body } = await createSignedDelivery({ type: 'email.bounced' })
  return { key: `${namespace}:${event.id}`, type: event.type, payload: body, timestamp: 1 }
}

describe('createInboxProcessor: items it can never process', () => {
  it('refuses a key of another namespace, also one of the same length, without running the handler, and logs what to fix', async () => {
    const ran: string[] = []
    const error = vi.fn<(line: string) => void>()
    const processor = createInboxProcessor({
      namespace: 'shop',
      store: new MemoryDedupStore(),
      logger: { error, warn: () => {} },
      handlers: { 'email.bounced': (event) => void ran.push(event.id) },
    })
    for (const other of ['prod', 'default']) {
      const failure = await processor.process(await itemOf(other)).catch((e: unknown) => e)
      expect(failure).toBeInstanceOf(InboxItemError)
      expect(failure).toMatchObject({ code: 'wrong_namespace', retryable: false })
      expect((failure as Error).message).toMatch(
        new RegExp(`queued under namespace "${other}", and this processor's namespace is "shop".*retrying it cannot help`),
      )
    }
    expect(ran).toEqual([])
    expect(error.mock.calls.map(([line]) => line)).toEqual([
      expect.stringMatching(/^\[@email-webhooks\/core\] wrong_namespace: this job was queued under namespace "prod"/),
      expect.stringMatching(/^\[@email-webhooks\/core\] wrong_namespace: this job was queued under namespace "default"/),
    ])
    expect(await processor.process(await itemOf('shop'))).toBe('handled')
    expect(ran).toHaveLength(1)
  })

  it('refuses a payload that is not the envelope its key names, as invalid_item', async () => {
    const processor = createInboxProcessor({ store: new MemoryDedupStore(), logger: false, handlers: {} })
    const item = await itemOf('default')
    const other = await itemOf('default')
    for (const payload of ['not json', other.payload]) {
      const failure = await processor.process({ ...item, payload }).catch((e: unknown) => e)
      expect(failure).toMatchObject({ name: 'InboxItemError', code: 'invalid_item', retryable: false })
    }
  })
})
