// foldEmailEvents: every precedence rule of the Ordering page's table, bad input, and order independence.
import { EMAIL_EVENT_TYPES, type EmailState, foldEmailEvents } from '@email-webhooks/core'
import { permutations, shuffled } from '@email-webhooks/core/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

const EMAIL = 'email-1'
const T0 = Date.UTC(2026, 0, 1)
let counter = 0
interface Ev {
  id: string
  type: string
  created_at: string
  data: Record<string, unknown>
}
function ev(type: string, offsetMs: number, extra: { id?: string; recipient?: string; email?: string } = {}): Ev {
  const data: Record<string, unknown> = { id: extra.email ?? EMAIL }
  if (extra.recipient !== undefined) data.recipient = extra.recipient
  return { id: extra.id ?? `evt-${String(++counter).padStart(4, '0')}`, type, created_at: new Date(T0 + offsetMs).toISOString(), data }
}
const statusOf = (...events: Ev[]) => foldEmailEvents(events).state.status
/** The status for the events in every arrival order (all must agree). */
function statusInEveryOrder(...events: Ev[]): EmailState['status'] {
  const all = new Set(permutations(events).map((order) => foldEmailEvents(order).state.status))
  expect(all.size).toBe(1)
  return [...all][0] as EmailState['status']
}

describe('foldEmailEvents: message status', () => {
  it('follows the lifecycle in order: the newest event decides', () => {
    expect(statusOf(ev('email.queued', 0))).toBe('queued')
    expect(statusInEveryOrder(ev('email.queued', 0), ev('email.deferred', 1000), ev('email.submitted', 2000))).toBe('submitted')
    expect(statusInEveryOrder(ev('email.queued', 0), ev('email.submitted', 1000), ev('email.deferred', 2000))).toBe('deferred')
    expect(statusInEveryOrder(ev('email.queued', 0), ev('email.uncertain', 1000))).toBe('uncertain')
  })

  it('does not regress when a late older event arrives last', () => {
    const { state } = foldEmailEvents([ev('email.submitted', 2000), ev('email.queued', 0), ev('email.deferred', 1000)])
    expect(state.status).toBe('submitted')
    expect(state.since?.type).toBe('email.submitted')
    expect(state.events.map((e) => e.type)).toEqual(['email.queued', 'email.deferred', 'email.submitted'])
  })

  it('keeps a terminal status against a newer non-terminal event', () => {
    expect(statusInEveryOrder(ev('email.rejected', 1000), ev('email.deferred', 2000), ev('email.submitted', 3000))).toBe('rejected')
    expect(statusInEveryOrder(ev('email.bounced', 1000), ev('email.queued', 2000))).toBe('bounced')
    expect(statusInEveryOrder(ev('email.cancelled', 1000), ev('email.submitted', 2000))).toBe('cancelled')
  })

  it('lets a newer terminal status replace an older terminal one', () => {
    expect(statusInEveryOrder(ev('email.bounced', 1000), ev('email.rejected', 2000))).toBe('rejected')
    expect(statusInEveryOrder(ev('email.rejected', 1000), ev('email.bounced', 2000))).toBe('bounced')
  })

  it.each([
    ['email.queued', 'email.submitted', 'submitted'],
    ['email.queued', 'email.submitting', 'submitting'],
    ['email.submitting', 'email.deferred', 'deferred'],
    ['email.deferred', 'email.submitted', 'submitted'],
    ['email.deferred', 'email.uncertain', 'uncertain'],
    ['email.uncertain', 'email.submitted', 'submitted'],
    ['email.submitted', 'email.bounced', 'bounced'],
    ['email.bounced', 'email.rejected', 'rejected'],
    ['email.rejected', 'email.cancelled', 'cancelled'],
  ])('in the same millisecond, %s then %s gives %s (type precedence, whatever the ids)', (a, b, expected) => {
    for (const [idA, idB] of [
      ['a', 'b'],
      ['b', 'a'],
    ]) {
      expect(statusInEveryOrder(ev(a, 0, { id: `${idA}-1` }), ev(b, 0, { id: `${idB}-2` }))).toBe(expected)
    }
  })

  it('breaks a tie of the same type in the same millisecond by event id', () => {
    const { state } = foldEmailEvents([ev('email.deferred', 0, { id: 'b' }), ev('email.deferred', 0, { id: 'a' })])
    expect(state.since?.eventId).toBe('b')
    expect(state.events.map((e) => e.eventId)).toEqual(['a', 'b'])
  })

  it('turns uncertain into submitted on submission_recovered, and does nothing otherwise', () => {
    expect(statusInEveryOrder(ev('email.uncertain', 0), ev('email.submission_recovered', 1000))).toBe('submitted')
    expect(statusInEveryOrder(ev('email.uncertain', 0), ev('email.submission_recovered', 0))).toBe('submitted')
    expect(statusInEveryOrder(ev('email.deferred', 0), ev('email.submission_recovered', 1000))).toBe('deferred')
    expect(statusInEveryOrder(ev('email.rejected', 0), ev('email.submission_recovered', 1000))).toBe('rejected')
    expect(statusOf(ev('email.submission_recovered', 0))).toBeNull()
    expect(statusInEveryOrder(ev('email.submission_recovered', 0), ev('email.uncertain', 1000))).toBe('uncertain')
  })

  it('leaves the status to message events: recipient events and complaints do not set one', () => {
    expect(statusOf(ev('email.recipient_accepted', 0, { recipient: 'a@x.test' }))).toBeNull()
    expect(statusInEveryOrder(ev('email.submitted', 0), ev('email.recipient_deferred', 1000), ev('email.complained', 2000))).toBe(
      'submitted',
    )
  })

  it('marks the message bounced on email.bounced, with or without a recipient', () => {
    expect(statusInEveryOrder(ev('email.submitted', 0), ev('email.bounced', 1000))).toBe('bounced')
    expect(statusInEveryOrder(ev('email.submitted', 0), ev('email.bounced', 1000, { recipient: 'a@x.test' }))).toBe('bounced')
  })
})

describe('foldEmailEvents: recipients', () => {
  const A = 'a@x.test'
  const B = 'b@y.test'

  it('keeps each recipient apart, keyed by address, sorted', () => {
    const { state } = foldEmailEvents([
      ev('email.recipient_accepted', 1000, { recipient: B }),
      ev('email.recipient_deferred', 1000, { recipient: A }),
    ])
    expect(Object.keys(state.recipients)).toEqual([A, B])
    expect(state.recipients[A]).toMatchObject({ address: A, status: 'deferred', complained: false })
    expect(state.recipients[B]).toMatchObject({ address: B, status: 'accepted' })
  })

  it('replaces deferred and resubmitted by any newer recipient event', () => {
    const events = [
      ev('email.recipient_deferred', 0, { recipient: A }),
      ev('email.recipient_resubmitted', 1000, { recipient: A }),
      ev('email.recipient_accepted', 2000, { recipient: A }),
    ]
    for (const order of permutations(events)) expect(foldEmailEvents(order).state.recipients[A]?.status).toBe('accepted')
    const deferredAgain = [ev('email.recipient_resubmitted', 0, { recipient: A }), ev('email.recipient_deferred', 1000, { recipient: A })]
    expect(foldEmailEvents(deferredAgain).state.recipients[A]?.status).toBe('deferred')
  })

  it('leaves accepted only for a newer bounced, and bounced never', () => {
    const accepted = ev('email.recipient_accepted', 0, { recipient: A })
    expect(foldEmailEvents([ev('email.recipient_deferred', 1000, { recipient: A }), accepted]).state.recipients[A]?.status).toBe('accepted')
    expect(foldEmailEvents([ev('email.bounced', 1000, { recipient: A }), accepted]).state.recipients[A]?.status).toBe('bounced')
    const bounced = ev('email.bounced', 0, { recipient: A })
    expect(foldEmailEvents([ev('email.recipient_accepted', 1000, { recipient: A }), bounced]).state.recipients[A]?.status).toBe('bounced')
    expect(foldEmailEvents([ev('email.recipient_resubmitted', 1000, { recipient: A }), bounced]).state.recipients[A]?.since?.type).toBe(
      'email.bounced',
    )
  })

  it('flags a complaint on the recipient and on the message, keeping the recipient status', () => {
    const { state } = foldEmailEvents([ev('email.recipient_accepted', 0, { recipient: A }), ev('email.complained', 1000, { recipient: A })])
    expect(state.complained).toBe(true)
    expect(state.recipients[A]).toMatchObject({ status: 'accepted', complained: true })
  })

  it('creates a recipient named only by a complaint, with no status', () => {
    const { state } = foldEmailEvents([ev('email.complained', 0, { recipient: B })])
    expect(state.recipients[B]).toEqual({ address: B, status: null, since: null, complained: true })
  })

  it('lists recipient events without an address as unattributed, oldest first (the sender does not guarantee one)', () => {
    const { state } = foldEmailEvents([
      ev('email.complained', 2000),
      ev('email.recipient_accepted', 0),
      ev('email.bounced', 1000),
      ev('email.submitted', 0),
    ])
    expect(state.unattributed.map((e) => e.type)).toEqual(['email.recipient_accepted', 'email.bounced', 'email.complained'])
    expect(state.recipients).toEqual({})
    expect(state.complained).toBe(true)
    expect(state.status).toBe('bounced')
  })

  it('reads data.recipient by default, trimmed; other shapes count as no address', () => {
    const at = (recipient: unknown) => ({ ...ev('email.recipient_accepted', 0), data: { id: EMAIL, recipient } })
    expect(Object.keys(foldEmailEvents([at('  a@x.test ')]).state.recipients)).toEqual(['a@x.test'])
    for (const recipient of [42, '', '   ', ['a@x.test'], null]) {
      expect(foldEmailEvents([at(recipient)]).state.unattributed).toHaveLength(1)
    }
  })

  it('uses recipientOf when given, and never for message events', () => {
    const seen: string[] = []
    const recipientOf = (event: { type: string; data: Record<string, unknown> }) => {
      seen.push(event.type)
      return typeof event.data.to === 'string' ? event.data.to : undefined
    }
    const accepted = { ...ev('email.recipient_accepted', 0), data: { id: EMAIL, to: A } }
    const { state } = foldEmailEvents([accepted, ev('email.submitted', 0)], { recipientOf })
    expect(Object.keys(state.recipients)).toEqual([A])
    expect(seen).toEqual(['email.recipient_accepted'])
  })
})

describe('foldEmailEvents: input that does not count', () => {
  it('reports each kind of bad input with its index and reason, and never throws', () => {
    const good = ev('email.queued', 0, { id: 'good' })
    const input: unknown[] = [
      good,
      null,
      'email.queued',
      [good],
      { ...good, id: undefined },
      { ...good, id: 'no-type', type: 5 },
      { ...good, id: 'no-time', created_at: undefined },
      { ...good, id: 'bad-time', created_at: 'tomorrow' },
      { ...good, id: 'local-time', created_at: '2026-01-01T00:00:00' },
      { ...good, id: 'no-data', data: undefined },
      { ...good, id: 'num-email', data: { id: 42 } },
      { ...good, id: 'future', type: 'email.opened' },
      { ...good, id: 'proto', type: 'toString' },
      { ...good, id: 'proto2', type: '__proto__' },
      { ...good, id: 'org', type: 'organization.updated' },
      { ...good, type: 'email.submitted' },
    ]
    const { state, ignored } = foldEmailEvents(input)
    expect(ignored.map((i) => [i.index, i.reason])).toEqual([
      [1, 'not_an_object'],
      [2, 'not_an_object'],
      [3, 'not_an_object'],
      [4, 'event_id_invalid'],
      [5, 'type_not_string'],
      [6, 'created_at_missing'],
      [7, 'created_at_unparseable'],
      [8, 'created_at_unparseable'],
      [9, 'email_id_not_string'],
      [10, 'email_id_not_string'],
      [11, 'no_state_effect'],
      [12, 'no_state_effect'],
      [13, 'no_state_effect'],
      [14, 'no_state_effect'],
      [15, 'duplicate_event_id'],
    ])
    expect(ignored[6]).toEqual({ index: 7, eventId: 'bad-time', type: 'email.queued', reason: 'created_at_unparseable' })
    expect(state.status).toBe('queued')
    expect(state.events.map((e) => e.eventId)).toEqual(['good'])
  })

  it('keeps, of two events with one id, the one that sorts first (the same in every order)', () => {
    const a = ev('email.submitted', 1000, { id: 'same' })
    const b = ev('email.deferred', 0, { id: 'same' })
    for (const order of [
      [a, b],
      [b, a],
    ]) {
      const { state, ignored } = foldEmailEvents(order)
      expect(state.status).toBe('deferred')
      expect(ignored).toEqual([{ index: order.indexOf(a), eventId: 'same', type: 'email.submitted', reason: 'duplicate_event_id' }])
    }
  })

  it('folds the email of the oldest event unless emailId is given; other emails are reported', () => {
    const mine = ev('email.submitted', 1000)
    const other = ev('email.queued', 0, { email: 'email-2' })
    expect(foldEmailEvents([mine, other]).state.emailId).toBe('email-2')
    const { state, ignored } = foldEmailEvents([mine, other], { emailId: EMAIL })
    expect(state).toMatchObject({ emailId: EMAIL, status: 'submitted' })
    expect(ignored).toEqual([{ index: 1, eventId: other.id, type: 'email.queued', reason: 'other_email' }])
  })

  it('gives an empty state for no events', () => {
    const empty = { emailId: null, status: null, since: null, complained: false, recipients: {}, unattributed: [], events: [] }
    expect(foldEmailEvents([])).toEqual({ state: empty, ignored: [] })
    expect(foldEmailEvents([], { emailId: EMAIL }).state.emailId).toBe(EMAIL)
  })

  it('never throws on arbitrary input', () => {
    fc.assert(
      fc.property(fc.array(fc.anything()), (input) => {
        const { state, ignored } = foldEmailEvents(input)
        expect(state.events.length + ignored.length).toBe(input.length)
      }),
      { numRuns: 300 },
    )
  })
})

describe('foldEmailEvents: arrival order does not matter', () => {
  // Every type the sender sends, plus types the fold knows but the sender does not send yet, and one it does not know.
  const TYPES = [...EMAIL_EVENT_TYPES, 'email.submitting', 'email.cancelled', 'email.opened']
  const arbitraryEvent = fc.record({
    id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'),
    type: fc.constantFrom(...TYPES),
    created_at: fc.oneof(
      { weight: 9, arbitrary: fc.integer({ min: 0, max: 4 }).map((s) => new Date(T0 + s * 1000).toISOString()) },
      { weight: 1, arbitrary: fc.constantFrom('2026-01-01T01:00:00+01:00', 'not a date', undefined) },
    ),
    data: fc.record({
      id: fc.constantFrom(EMAIL, EMAIL, EMAIL, 'email-2'),
      recipient: fc.option(fc.constantFrom('a@x.test', 'b@x.test'), { nil: undefined }),
    }),
  })

  it('folds every permutation of a random set of events to the same state (property)', () => {
    fc.assert(
      fc.property(fc.array(arbitraryEvent, { maxLength: 12 }), fc.integer(), fc.integer(), (events, seedA, seedB) => {
        const expected = foldEmailEvents(events).state
        expect(foldEmailEvents(shuffled(events, seedA)).state).toEqual(expected)
        expect(foldEmailEvents(shuffled(events, seedB)).state).toEqual(expected)
        expect(foldEmailEvents([...events].reverse()).state).toEqual(expected)
        expect(JSON.stringify(foldEmailEvents(shuffled(events, seedA)).state)).toBe(JSON.stringify(expected))
      }),
      { numRuns: 400 },
    )
  })

  it('folds every permutation to the same state when events collide on id, time and type (property)', () => {
    const colliding = fc.record({
      id: fc.constantFrom('a', 'b'),
      type: fc.constantFrom('email.bounced', 'email.recipient_accepted', 'email.complained', 'email.deferred'),
      created_at: fc.constantFrom('2026-01-01T00:00:00Z', '2026-01-01T01:00:00+01:00', '2026-01-01T00:00:01Z'),
      data: fc.record({
        id: fc.constantFrom(EMAIL, 'email-2'),
        recipient: fc.option(fc.constantFrom('a@x.test', 'b@x.test'), { nil: undefined }),
      }),
    })
    fc.assert(
      fc.property(fc.array(colliding, { maxLength: 8 }), fc.integer(), (events, seed) => {
        const expected = foldEmailEvents(events).state
        expect(foldEmailEvents(shuffled(events, seed)).state).toEqual(expected)
        expect(foldEmailEvents([...events].reverse()).state).toEqual(expected)
      }),
      { numRuns: 400 },
    )
  })

  it('folds all 5,040 orders of a 7-event lifecycle with two recipients to one state', () => {
    const events = [
      ev('email.queued', 0),
      ev('email.deferred', 1000),
      ev('email.submitted', 2000),
      ev('email.recipient_deferred', 3000, { recipient: 'a@x.test' }),
      ev('email.recipient_accepted', 3000, { recipient: 'b@x.test' }),
      ev('email.recipient_accepted', 4000, { recipient: 'a@x.test' }),
      ev('email.complained', 5000, { recipient: 'b@x.test' }),
    ]
    const orders = permutations(events)
    expect(orders).toHaveLength(5040)
    const expected = foldEmailEvents(events).state
    expect(expected).toMatchObject({
      status: 'submitted',
      complained: true,
      recipients: { 'a@x.test': { status: 'accepted', complained: false }, 'b@x.test': { status: 'accepted', complained: true } },
    })
    const states = new Set(orders.map((order) => JSON.stringify(foldEmailEvents(order).state)))
    expect([...states]).toEqual([JSON.stringify(expected)])
  })
})
