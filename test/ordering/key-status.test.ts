// Order keys and positions of events, the ctx.order shape, and the store capability check.
import {
  MAX_ORDER_KEY_LENGTH,
  MemoryDedupStore,
  type OrderInput,
  orderFromClaim,
  orderInputOf,
  orderStatusOf,
  supportsOrdering,
  unknownOrder,
  type WebhookEvent,
} from '@email-webhooks/core'
import { describe, expect, it } from 'vitest'

const AT = '2026-01-01T10:00:00.250Z'
const AT_MS = Date.UTC(2026, 0, 1, 10, 0, 0, 250)
const event = (overrides: Partial<WebhookEvent> = {}): WebhookEvent => ({
  id: 'evt-1',
  type: 'email.submitted',
  created_at: AT,
  data: { id: 'email-1' },
  ...overrides,
})

describe('orderInputOf', () => {
  it('keys an email event by email: + data.id and positions it at (created_at ms, event id)', () => {
    expect(orderInputOf(event())).toEqual({
      ok: true,
      key: 'email:email-1',
      mark: { createdAtMs: AT_MS, eventId: 'evt-1', type: 'email.submitted' },
    })
  })

  it('keys a future email.* type by data.id too', () => {
    expect(orderInputOf(event({ type: 'email.opened' }))).toMatchObject({ ok: true, key: 'email:email-1' })
  })

  it('does not order a non-email event without an orderKey function', () => {
    expect(orderInputOf(event({ type: 'organization.updated', data: { id: 'org' } }))).toEqual({
      ok: false,
      reason: 'no_order_key',
      key: null,
    })
  })

  it('orders a non-email event by the orderKey function, and not when it returns null or undefined', () => {
    const org = event({ type: 'organization.updated', data: { organization_id: 'org-9' } })
    const orderKey = (e: WebhookEvent) => (typeof e.data.organization_id === 'string' ? `org:${e.data.organization_id}` : null)
    expect(orderInputOf(org, { orderKey })).toMatchObject({ ok: true, key: 'org:org-9' })
    expect(orderInputOf(event({ type: 'organization.updated', data: {} }), { orderKey })).toMatchObject({
      ok: false,
      reason: 'no_order_key',
    })
    expect(orderInputOf(org, { orderKey: () => undefined })).toMatchObject({ ok: false, reason: 'no_order_key' })
  })

  it('never consults orderKey for email events', () => {
    expect(orderInputOf(event(), { orderKey: () => 'custom' })).toMatchObject({ ok: true, key: 'email:email-1' })
  })

  it.each([
    ['returns a number', () => 42 as unknown as string],
    ['returns an empty string', () => ''],
    ['returns a key over the limit', () => 'k'.repeat(MAX_ORDER_KEY_LENGTH + 1)],
  ])('reports order_key_invalid when orderKey %s', (_what, orderKey) => {
    expect(orderInputOf(event({ type: 'team.changed' }), { orderKey })).toEqual({ ok: false, reason: 'order_key_invalid', key: null })
  })

  it('accepts a key of exactly the limit', () => {
    const key = 'k'.repeat(MAX_ORDER_KEY_LENGTH)
    expect(orderInputOf(event({ type: 'team.changed' }), { orderKey: () => key })).toMatchObject({ ok: true, key })
  })

  it('reports order_key_failed, without throwing, when orderKey throws', () => {
    const orderKey = () => {
      throw new Error('boom')
    }
    expect(orderInputOf(event({ type: 'team.changed' }), { orderKey })).toEqual({ ok: false, reason: 'order_key_failed', key: null })
  })

  it.each([
    ['a number', 7],
    ['missing', undefined],
    ['empty', ''],
    ['an object', { id: 'x' }],
  ])('reports email_id_not_string when data.id is %s', (_what, id) => {
    expect(orderInputOf(event({ data: { id } }))).toEqual({ ok: false, reason: 'email_id_not_string', key: null })
  })

  it('reports email_id_not_string when data is not an object', () => {
    expect(orderInputOf(event({ data: null as unknown as WebhookEvent['data'] }))).toMatchObject({ reason: 'email_id_not_string' })
  })

  it('reports an email id too long for a key as order_key_invalid', () => {
    expect(orderInputOf(event({ data: { id: 'e'.repeat(MAX_ORDER_KEY_LENGTH) } }))).toMatchObject({
      ok: false,
      reason: 'order_key_invalid',
    })
  })

  it.each([
    ['created_at_missing', undefined],
    ['created_at_missing', ''],
    ['created_at_unparseable', 'last tuesday'],
    ['created_at_unparseable', '2026-01-01T10:00:00'],
    ['created_at_unparseable', 1767261600000],
  ])('reports %s for created_at %j, with the key it found', (reason, createdAt) => {
    expect(orderInputOf(event({ created_at: createdAt as string }))).toEqual({ ok: false, reason, key: 'email:email-1' })
  })

  it('reports event_id_invalid when the event id is not a non-empty string', () => {
    expect(orderInputOf(event({ id: '' }))).toMatchObject({ ok: false, reason: 'event_id_invalid' })
    expect(orderInputOf(event({ id: 5 as unknown as string }))).toMatchObject({ ok: false, reason: 'event_id_invalid' })
  })
})

describe('orderStatusOf and orderFromClaim', () => {
  const input = orderInputOf(event()) as Extract<OrderInput, { ok: true }>
  const older = { createdAtMs: AT_MS - 1, eventId: 'zzz', type: 'email.queued' }
  const newer = { createdAtMs: AT_MS + 1, eventId: 'aaa', type: 'email.rejected' }
  const sameMsLargerId = { createdAtMs: AT_MS, eventId: 'evt-2', type: 'email.deferred' }
  const sameMsSmallerId = { createdAtMs: AT_MS, eventId: 'evt-0', type: 'email.deferred' }

  it('says first when no mark is remembered', () => {
    expect(orderStatusOf('k', input.mark, null)).toEqual({ status: 'first', key: 'k', newestHandled: null })
  })

  it('says latest over an older mark, and names it', () => {
    expect(orderStatusOf('k', input.mark, older)).toEqual({ status: 'latest', key: 'k', newestHandled: older })
    expect(orderStatusOf('k', input.mark, sameMsSmallerId).status).toBe('latest')
  })

  it('says stale under a newer mark, and names it', () => {
    expect(orderStatusOf('k', input.mark, newer)).toEqual({ status: 'stale', key: 'k', newestHandled: newer })
    expect(orderStatusOf('k', input.mark, sameMsLargerId).status).toBe('stale')
  })

  it('says latest for the very event of the mark (handled before, its dedup record expired)', () => {
    expect(orderStatusOf('k', input.mark, input.mark).status).toBe('latest')
  })

  it('passes the mark from a store claim through, copied to exactly its three fields', () => {
    const order = orderFromClaim(input, { mark: { ...newer, extra: 'ignored' } })
    expect(order).toEqual({ status: 'stale', key: 'email:email-1', newestHandled: newer })
    expect(orderFromClaim(input, { mark: null })).toEqual({ status: 'first', key: 'email:email-1', newestHandled: null })
  })

  it('says unknown (store_without_ordering) when the claim result carries no order', () => {
    for (const claimOrder of [undefined, null, 'yes', {}]) {
      expect(orderFromClaim(input, claimOrder)).toEqual(unknownOrder('store_without_ordering', 'email:email-1'))
    }
  })

  it('says unknown (store_mark_invalid) when the store returns a malformed mark, never guessing', () => {
    for (const mark of [
      { createdAtMs: '1', eventId: 'a', type: 't' },
      { createdAtMs: 1.5, eventId: 'a', type: 't' },
      { createdAtMs: 1, eventId: '', type: 't' },
      { createdAtMs: 1, eventId: 'a' },
      5,
    ]) {
      expect(orderFromClaim(input, { mark })).toEqual({
        status: 'unknown',
        key: 'email:email-1',
        newestHandled: null,
        reason: 'store_mark_invalid',
      })
    }
  })

  it('says unknown with the input reason when the event has no usable order, whatever the store says', () => {
    const bad = orderInputOf(event({ created_at: 'soon' }))
    expect(orderFromClaim(bad, { mark: newer })).toEqual({
      status: 'unknown',
      key: 'email:email-1',
      newestHandled: null,
      reason: 'created_at_unparseable',
    })
  })
})

describe('supportsOrdering', () => {
  it('is true for the built-in MemoryDedupStore, false for a store that says anything but true', () => {
    expect(supportsOrdering(new MemoryDedupStore())).toBe(true)
    const base = { claim: async () => ({ status: 'duplicate' as const }), complete: async () => true, release: async () => true }
    expect(supportsOrdering({ ...base, ordering: 'yes' } as never)).toBe(false)
    expect(supportsOrdering({ ...base, ordering: true } as never)).toBe(true)
  })
})
