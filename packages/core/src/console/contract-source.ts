/**
 * The console's reads of a store that registered none of its own (the memory store, a custom
 * store): only what the store contract offers. `lookup` for an event (no times), the inbox's
 * `list` for entries (no paging: at most the first 1,000, filtered here), nothing per email but
 * inbox entries that carry the order key. Each page says what it could not read.
 */
import type { InboxEntry, InboxQueue } from '../store/inbox.js'
import type { DedupStore } from '../store/types.js'
import { type ConsoleSource, ENTRY_TIME, type EntrySummary } from './source.js'

/** The most entries one read asks `list` for. */
const LIST_LIMIT = 1_000

/** An entry without its payload. */
export function summaryOf(entry: InboxEntry): EntrySummary {
  return {
    key: entry.key,
    type: entry.type,
    state: entry.state,
    attempts: entry.attempts,
    enqueuedAt: entry.enqueuedAt,
    nextAttemptAt: entry.nextAttemptAt,
    endedAt: entry.endedAt,
    lastError: entry.lastError,
    orderKey: entry.orderKey ?? null,
    createdAtMs: entry.createdAtMs ?? null,
  }
}

function noInbox(): Error {
  return new Error('this store has no inbox (store.inbox)')
}

/**
 * The reads of `store` through its contract only.
 * @param store Any dedup store.
 */
export function contractSource(store: DedupStore): ConsoleSource {
  const inbox: InboxQueue | undefined = store.inbox
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name
  const kind = name === 'MemoryDedupStore' ? 'Memory store' : typeof name === 'string' && name !== 'Object' ? name : 'Custom store'
  const listed = async (state?: InboxEntry['state']): Promise<EntrySummary[]> => {
    if (!inbox) throw noInbox()
    const entries = await inbox.list(state === undefined ? { limit: LIST_LIMIT } : { state, limit: LIST_LIMIT })
    return entries.map(summaryOf)
  }
  return {
    kind,
    location: 'read through the store contract',
    paging: false,
    async overview() {
      return {
        figures: [],
        recordedByHour: undefined,
        notes: [
          `${kind} registers no console reads of its own: the console asks it only what the store contract offers (lookup, and its inbox's stats and list), so it cannot count or chart its records.`,
        ],
      }
    },
    async record(key) {
      if (typeof store.lookup !== 'function') return { state: 'unknown', expiresAt: null, attempt: null }
      return { state: await store.lookup(key), expiresAt: null, attempt: null }
    },
    async email(orderKey, _now, limit) {
      const notes = [
        'This store keeps no order marks or facts the console can read; only inbox entries recorded with ordering on carry their email.',
      ]
      if (!inbox) return { mark: undefined, facts: undefined, entries: undefined, notes }
      const all = await listed()
      if (all.length === LIST_LIMIT) notes.push(`Only the first ${LIST_LIMIT} inbox entries were looked through.`)
      const mine = all.filter((entry) => entry.orderKey === orderKey).slice(0, limit)
      return { mark: undefined, facts: undefined, entries: mine, notes }
    },
    async entries(query) {
      const time = ENTRY_TIME[query.state]
      const all = await listed(query.state)
      const matching = all
        .filter((entry) => query.type === undefined || entry.type === query.type)
        .filter((entry) => query.before === undefined || (entry[time] ?? 0) <= query.before)
        .sort((a, b) => (b[time] ?? 0) - (a[time] ?? 0) || (a.key < b.key ? 1 : -1))
      const note = `This store's inbox offers no paging: the newest ${query.limit} of ${all.length === LIST_LIMIT ? `the first ${LIST_LIMIT}` : 'its'} ${query.state} entries.`
      return { entries: matching.slice(0, query.limit), next: undefined, note }
    },
    async countDead(filter) {
      const dead = await listed('dead')
      const count = dead.filter(
        (entry) =>
          (filter.type === undefined || entry.type === filter.type) &&
          (filter.before === undefined || (entry.endedAt ?? 0) <= filter.before),
      ).length
      return { count, exact: dead.length < LIST_LIMIT }
    },
  }
}
