// The ordering model's pure parts: the strict created_at parser, the id and position order.
import { compareEventIds, compareOrderPositions, parseCreatedAt } from '@email-webhooks/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

describe('parseCreatedAt', () => {
  it.each([
    ['2026-01-01T00:00:00Z', Date.UTC(2026, 0, 1)],
    ['2026-01-01T00:00:00.123Z', Date.UTC(2026, 0, 1, 0, 0, 0, 123)],
    ['2026-01-01T00:00:00.5Z', Date.UTC(2026, 0, 1, 0, 0, 0, 500)],
    ['2026-01-01t00:00:00z', Date.UTC(2026, 0, 1)],
    ['2026-01-01 00:00:00Z', Date.UTC(2026, 0, 1)],
    ['2026-01-01T02:30:00+02:30', Date.UTC(2026, 0, 1)],
    ['2025-12-31T19:00:00-05:00', Date.UTC(2026, 0, 1)],
    ['2024-02-29T12:00:00Z', Date.UTC(2024, 1, 29, 12)],
    ['2000-02-29T00:00:00Z', Date.UTC(2000, 1, 29)],
    ['1969-12-31T23:59:59.999Z', -1],
    ['2016-12-31T23:59:60Z', Date.UTC(2017, 0, 1)],
  ])('parses %s', (text, ms) => {
    expect(parseCreatedAt(text)).toEqual({ ok: true, ms })
  })

  it('drops digits past the millisecond instead of rounding', () => {
    expect(parseCreatedAt('2026-01-01T00:00:00.123999Z')).toEqual({ ok: true, ms: Date.UTC(2026, 0, 1, 0, 0, 0, 123) })
    expect(parseCreatedAt('2026-01-01T00:00:00.999999999Z')).toEqual({ ok: true, ms: Date.UTC(2026, 0, 1, 0, 0, 0, 999) })
  })

  it('reads years below 100 as themselves, not as 19xx', () => {
    const result = parseCreatedAt('0050-06-01T00:00:00Z')
    const expected = new Date(0)
    expected.setUTCFullYear(50, 5, 1)
    expect(result).toEqual({ ok: true, ms: expected.getTime() })
  })

  it.each([undefined, null, ''])('reports %j as missing', (value) => {
    expect(parseCreatedAt(value)).toEqual({ ok: false, reason: 'created_at_missing' })
  })

  it.each([
    ['a number', 1767225600000],
    ['an object', { at: '2026-01-01T00:00:00Z' }],
    ['a date alone', '2026-01-01'],
    ['a time without offset (its instant would be a guess)', '2026-01-01T00:00:00'],
    ['free text', 'yesterday'],
    ['a date Date.parse would accept', 'Thu, 01 Jan 2026 00:00:00 GMT'],
    ['February 30', '2026-02-30T00:00:00Z'],
    ['February 29 of a common year', '2025-02-29T00:00:00Z'],
    ['February 29 of 1900', '1900-02-29T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['day 0', '2026-01-00T00:00:00Z'],
    ['hour 24', '2026-01-01T24:00:00Z'],
    ['minute 60', '2026-01-01T00:60:00Z'],
    ['second 61', '2026-01-01T00:00:61Z'],
    ['an offset of 24 hours', '2026-01-01T00:00:00+24:00'],
    ['an offset without colon', '2026-01-01T00:00:00+0200'],
    ['an empty fraction', '2026-01-01T00:00:00.Z'],
    ['trailing text', '2026-01-01T00:00:00Z '],
    ['leading text', ' 2026-01-01T00:00:00Z'],
    ['a very long fraction', `2026-01-01T00:00:00.${'1'.repeat(80)}Z`],
  ])('reports %s as unparseable', (_what, value) => {
    expect(parseCreatedAt(value)).toEqual({ ok: false, reason: 'created_at_unparseable' })
  })

  it('agrees with Date.parse on every UTC ISO string toISOString produces', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }),
        (date) => {
          expect(parseCreatedAt(date.toISOString())).toEqual({ ok: true, ms: date.getTime() })
        },
      ),
      { numRuns: 500 },
    )
  })

  it('gives the same instant for the same time written with any offset', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2100, 0, 1) }),
        fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
        (ms, offset) => {
          const local = new Date(ms + offset * 60_000).toISOString().slice(0, -1)
          const sign = offset < 0 ? '-' : '+'
          const abs = Math.abs(offset)
          const text = `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
          expect(parseCreatedAt(text)).toEqual({ ok: true, ms })
        },
      ),
      { numRuns: 300 },
    )
  })

  it('agrees with a regex reference parser on near-valid text (differential property)', () => {
    const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/
    const reference = (text: string): number | undefined => {
      const m = RFC3339.exec(text)
      if (!m || text.length > 64) return undefined
      const [y, mo, d, h, mi, sec] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as number[]
      const date = new Date(0)
      date.setUTCFullYear(y as number, (mo as number) - 1, d)
      if (date.getUTCMonth() !== (mo as number) - 1 || (h as number) > 23 || (mi as number) > 59 || (sec as number) > 60) return undefined
      const offset = m[9] ? (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11])) : 0
      if (m[9] && (Number(m[10]) > 23 || Number(m[11]) > 59)) return undefined
      const ms = Number((m[7] ?? '').slice(0, 3).padEnd(3, '0'))
      return date.getTime() + (((h as number) * 60 + (mi as number) - offset) * 60 + (sec as number)) * 1000 + ms
    }
    const digits = (n: number) => fc.stringMatching(new RegExp(`^[0-9]{${n}}$`))
    const near = fc
      .tuple(
        digits(4),
        fc.constantFrom('-', '/'),
        fc.constantFrom('01', '02', '12', '13', '00', '1'),
        fc.constantFrom('-'),
        fc.constantFrom('01', '28', '29', '30', '31', '32'),
        fc.constantFrom('T', 't', ' ', '_'),
        fc.constantFrom('00', '23', '24', '9'),
        fc.constantFrom(':'),
        fc.constantFrom('00', '59', '60'),
        fc.constantFrom(':', ''),
        fc.constantFrom('00', '59', '60', '61'),
        fc.oneof(
          fc.constant(''),
          fc.constant('.'),
          digits(1).map((d) => `.${d}`),
          digits(3).map((d) => `.${d}`),
          digits(7).map((d) => `.${d}`),
        ),
        fc.constantFrom('Z', 'z', '', '+00:00', '-05:30', '+24:00', '+05:60', '+0530', '+05:3', 'Zx'),
      )
      .map((parts) => parts.join(''))
    fc.assert(
      fc.property(near, (text) => {
        const expected = reference(text)
        expect(parseCreatedAt(text)).toEqual(
          expected === undefined ? { ok: false, reason: 'created_at_unparseable' } : { ok: true, ms: expected },
        )
      }),
      { numRuns: 3000 },
    )
  })

  it('never throws, whatever it is given', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.anything()), (value) => {
        const result = parseCreatedAt(value)
        if (result.ok) {
          expect(typeof value).toBe('string')
          expect(Number.isSafeInteger(result.ms)).toBe(true)
        } else {
          // Only "absent" values are missing; anything else that gives no position is unparseable.
          const missing = value === undefined || value === null || value === ''
          expect(result.reason).toBe(missing ? 'created_at_missing' : 'created_at_unparseable')
        }
      }),
      { numRuns: 500 },
    )
  })
})

describe('compareEventIds', () => {
  it('orders ASCII ids as ASCII', () => {
    expect(compareEventIds('a', 'b')).toBe(-1)
    expect(compareEventIds('b', 'a')).toBe(1)
    expect(compareEventIds('a', 'a')).toBe(0)
    expect(compareEventIds('B', 'a')).toBe(-1)
    expect(compareEventIds('ab', 'abc')).toBe(-1)
  })

  it('orders like the UTF-8 bytes (SQLite BINARY, PostgreSQL COLLATE "C"), also where UTF-16 order differs', () => {
    // U+FF5E sorts before U+1F600 in code points, after it in UTF-16 code units.
    expect('\u{1F600}' < '\uFF5E').toBe(true)
    expect(compareEventIds('\uFF5E', '\u{1F600}')).toBe(-1)
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        const bytes = Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')))
        expect(compareEventIds(a, b)).toBe(bytes)
      }),
      { numRuns: 1000 },
    )
  })
})

describe('compareOrderPositions', () => {
  it('orders by created_at first, then by event id', () => {
    expect(compareOrderPositions({ createdAtMs: 1, eventId: 'z' }, { createdAtMs: 2, eventId: 'a' })).toBe(-1)
    expect(compareOrderPositions({ createdAtMs: 2, eventId: 'a' }, { createdAtMs: 1, eventId: 'z' })).toBe(1)
    expect(compareOrderPositions({ createdAtMs: 1, eventId: 'b' }, { createdAtMs: 1, eventId: 'a' })).toBe(1)
    expect(compareOrderPositions({ createdAtMs: 1, eventId: 'a' }, { createdAtMs: 1, eventId: 'a' })).toBe(0)
  })

  it('is a total order: antisymmetric and transitive', () => {
    const position = fc.record({ createdAtMs: fc.integer({ min: 0, max: 3 }), eventId: fc.constantFrom('a', 'b', 'c', 'ä') })
    fc.assert(
      fc.property(position, position, position, (a, b, c) => {
        expect(compareOrderPositions(a, b)).toBe(-compareOrderPositions(b, a) || 0)
        if (compareOrderPositions(a, b) <= 0 && compareOrderPositions(b, c) <= 0) expect(compareOrderPositions(a, c)).toBeLessThanOrEqual(0)
      }),
    )
  })
})
