/** What the cases of the inbox conformance suite share: fresh items, checks, and a take of one key on a shared store. */
import type { InboxItem, InboxLease, InboxQueue } from '@email-webhooks/core'

/** Long enough never to lapse or end during a test. */
export const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

class InboxConformanceFailure extends Error {
  override readonly name = 'InboxConformanceFailure'
}

/** Throws an `InboxConformanceFailure` with `message` unless `condition` holds. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new InboxConformanceFailure(message)
}

export const sleep = (ms: number): Promise<void> => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A fresh item (random key; with `orderKey`, ordered by `createdAtMs`). */
export function item(extra: Partial<InboxItem> = {}): InboxItem {
  const id = crypto.randomUUID()
  const payload = JSON.stringify({ id, type: 'email.bounced', created_at: '2026-01-01T00:00:00.000Z', data: { id: crypto.randomUUID() } })
  return { key: `conformance:${id}`, type: 'email.bounced', payload, timestamp: 1_767_225_600, ...extra }
}

/**
 * Takes until `key` comes out (other tests' entries on a shared store are given back at once),
 * or undefined when none is left.
 */
export async function takeKey(
  inbox: InboxQueue,
  key: string,
  ordered: boolean = false,
  leaseMs: number = LONG.leaseMs,
): Promise<InboxLease | undefined> {
  const others: InboxLease[] = []
  try {
    for (let i = 0; i < 1_000; i++) {
      const lease = await inbox.take({ leaseMs, ordered })
      if (!lease || lease.key === key) return lease
      others.push(lease)
    }
    return undefined
  } finally {
    for (const other of others) await inbox.defer(other, { retryInMs: 0 })
  }
}
