/**
 * The ordering model's position of an event: `(created_at in ms, event id)`, a strict parser of
 * `created_at` (RFC 3339 / ISO 8601 date-time with an offset, nothing guessed) and the one total
 * order that stores, the receiver and the fold helper share.
 */

/** Longest `created_at` text considered; longer text is reported unparseable. */
const MAX_CREATED_AT_LENGTH = 64

/** Where an event sits in time: compare two with {@link compareOrderPositions}. */
export interface OrderPosition {
  /** `created_at` in whole milliseconds since the epoch (digits past the millisecond are dropped). */
  createdAtMs: number
  /** The event id (= `webhook-id`): the tie-break when two events share a millisecond. */
  eventId: string
}

/**
 * The high-water mark a store keeps per order key: the position and type of the newest event
 * already handled (completed) for that key.
 */
export interface OrderMark extends OrderPosition {
  /** The event type of that newest handled event, e.g. `'email.submitted'`. */
  type: string
}

/** Why a `created_at` could not give a position. */
export type CreatedAtProblem = 'created_at_missing' | 'created_at_unparseable'

/** Result of {@link parseCreatedAt}: the milliseconds, or why there are none. */
export type ParsedCreatedAt = { ok: true; ms: number } | { ok: false; reason: CreatedAtProblem }

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31
}

/** Days from 1970-01-01 to the civil date (proleptic Gregorian), without `Date`'s two-digit-year quirk. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const mp = (month + 9) % 12
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146_097 + doe - 719_468
}

/**
 * Parses an event's `created_at` strictly: an RFC 3339 date-time (`2026-01-01T10:00:00.123Z`,
 * `…+02:00`; `T`, `t` or a space between date and time) with a `Z` or `±hh:mm` offset. Digits past
 * the millisecond are dropped (not rounded); a leap second `:60` counts as the next second. A date
 * alone, a time without an offset, an impossible date (`02-30`) or any other text is unparseable —
 * never guessed, never thrown.
 *
 * @param value The `created_at` value as it arrived (any type).
 * @returns `{ ok: true, ms }` or `{ ok: false, reason }`; never throws.
 * @example
 * parseCreatedAt('2026-01-01T00:00:00.5+01:00') // { ok: true, ms: 1767222000500 }
 * parseCreatedAt('yesterday') // { ok: false, reason: 'created_at_unparseable' }
 */
export function parseCreatedAt(value: unknown): ParsedCreatedAt {
  if (value === undefined || value === null || value === '') return { ok: false, reason: 'created_at_missing' }
  if (typeof value !== 'string' || value.length > MAX_CREATED_AT_LENGTH) return UNPARSEABLE
  const ms = parseRfc3339(value)
  return ms === undefined ? UNPARSEABLE : { ok: true, ms }
}

const UNPARSEABLE: ParsedCreatedAt = Object.freeze({ ok: false, reason: 'created_at_unparseable' })

/** The number written by `length` ASCII digits at `start`, or -1. A hand parser: a regex costs ~3x more per event. */
function digitsAt(s: string, start: number, length: number): number {
  let n = 0
  for (let i = start; i < start + length; i++) {
    const d = s.charCodeAt(i) - 48
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}

/** `YYYY-MM-DD(T|t| )hh:mm:ss[.fraction](Z|z|±hh:mm)` to ms since the epoch, or undefined. */
function parseRfc3339(s: string): number | undefined {
  if (s.length < 20 || s[4] !== '-' || s[7] !== '-' || s[13] !== ':' || s[16] !== ':') return undefined
  const separator = s[10]
  if (separator !== 'T' && separator !== 't' && separator !== ' ') return undefined
  const year = digitsAt(s, 0, 4)
  const month = digitsAt(s, 5, 2)
  const day = digitsAt(s, 8, 2)
  const hour = digitsAt(s, 11, 2)
  const minute = digitsAt(s, 14, 2)
  const second = digitsAt(s, 17, 2)
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return undefined
  let pos = 19
  let millis = 0
  if (s[pos] === '.') {
    const first = ++pos
    while (pos < s.length && s.charCodeAt(pos) >= 48 && s.charCodeAt(pos) <= 57) {
      if (pos - first < 3) millis += (s.charCodeAt(pos) - 48) * 10 ** (2 - (pos - first))
      pos++
    }
    if (pos === first) return undefined
  }
  let offsetMinutes = 0
  const zone = s[pos]
  if ((zone === 'Z' || zone === 'z') && pos === s.length - 1) offsetMinutes = 0
  else if ((zone === '+' || zone === '-') && pos === s.length - 6 && s[pos + 3] === ':') {
    const oh = digitsAt(s, pos + 1, 2)
    const om = digitsAt(s, pos + 4, 2)
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return undefined
    offsetMinutes = (zone === '-' ? -1 : 1) * (oh * 60 + om)
  } else return undefined
  return ((daysFromCivil(year, month, day) * 24 + hour) * 60 + minute - offsetMinutes) * 60_000 + second * 1000 + millis
}

/** Maps a UTF-16 code unit so that comparing mapped units gives code-point (= UTF-8 byte) order. */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000
  if (unit >= 0xe000) return unit - 0x800
  return unit
}

/**
 * Compares two event ids in Unicode code-point order, which is the byte order of their UTF-8
 * text: what SQLite's `BINARY`, PostgreSQL's `COLLATE "C"` and a byte-wise Lua loop compute. For
 * the ASCII ids the verifier admits it is plain ASCII order.
 *
 * @param a First id.
 * @param b Second id.
 * @returns -1, 0 or 1.
 * @example
 * compareEventIds('a', 'b') // -1
 */
export function compareEventIds(a: string, b: string): -1 | 0 | 1 {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointRank(x) < codePointRank(y) ? -1 : 1
  }
  return a.length < b.length ? -1 : 1
}

/**
 * The order of positions: earlier `createdAtMs` first; in the same millisecond, the smaller
 * event id (see {@link compareEventIds}) first. Stores must compute exactly this.
 *
 * @param a First position.
 * @param b Second position.
 * @returns -1 when `a` is older, 1 when newer, 0 when both name the same event at the same time.
 * @example
 * compareOrderPositions({ createdAtMs: 1, eventId: 'b' }, { createdAtMs: 1, eventId: 'a' }) // 1
 */
export function compareOrderPositions(a: OrderPosition, b: OrderPosition): -1 | 0 | 1 {
  if (a.createdAtMs !== b.createdAtMs) return a.createdAtMs < b.createdAtMs ? -1 : 1
  return compareEventIds(a.eventId, b.eventId)
}
