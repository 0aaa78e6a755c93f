/** Reading the query string and forms safely: known states only, bounded lengths, dates as UTC; anything else is refused with a message, never thrown. */
import type { InboxState } from '../store/inbox.js'
import { parseUtc } from './format.js'

/** The inbox states, in the order the filters offer them. */
export const INBOX_STATES: readonly InboxState[] = ['pending', 'running', 'dead', 'done']

/** The longest id, type or cursor the console reads from a request. */
export const MAX_FIELD = 512

/** A filter of inbox entries. */
export interface EntryFilter {
  state: InboxState
  type: string | undefined
  before: number | undefined
  cursor: string | undefined
}

/** A filter, or what is wrong with the request's. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string }

function field(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name)
  if (value === null) return undefined
  const trimmed = value.trim()
  return trimmed === '' ? undefined : trimmed
}

/**
 * The entry filter of a query string or form.
 * @param fallback The state when none is given.
 */
export function entryFilter(params: URLSearchParams, fallback: InboxState): Parsed<EntryFilter> {
  const stateText = field(params, 'state') ?? fallback
  if (!(INBOX_STATES as readonly string[]).includes(stateText)) {
    return { ok: false, problem: `state must be one of ${INBOX_STATES.join(', ')}.` }
  }
  const type = field(params, 'type')
  const cursor = field(params, 'after')
  if ((type?.length ?? 0) > MAX_FIELD || (cursor?.length ?? 0) > MAX_FIELD * 3) return { ok: false, problem: 'A filter value is too long.' }
  const before = parseUtc(params.get('before'))
  if (before === null) return { ok: false, problem: 'The date is not one: use 2026-11-27 or 2026-11-27T12:00 (UTC).' }
  return { ok: true, value: { state: stateText as InboxState, type, before, cursor } }
}
