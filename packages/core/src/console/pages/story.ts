/**
 * An email's story, from what the store keeps of it (with `ordering: true`): its inbox entries (with
 * ids, states, attempts and errors), the facts (how many events of each type and `created_at` were
 * recorded as done, the only per-email trace of request mode) and the order mark (the newest event
 * recorded). Rows in `created_at` order. Pure: the page (email.ts) reads, this arranges.
 */
import type { EmailRecords, EntrySummary, FactRecord } from '../source.js'

/** One event of the story. */
export interface StoryRow {
  createdAtMs: number | null
  type: string
  /** The dedup key, when the store kept it (inbox entries; the mark's event). */
  key: string | undefined
  /** Inbox state, or `recorded` for an event known only from the facts. */
  did: 'pending' | 'running' | 'done' | 'dead' | 'recorded'
  attempts: number | null
  lastError: string | null
  /** For `recorded` rows: how many of these were brought by reconcile and not yet matched by the sender's delivery. */
  reconciled: number
  /** It is the order mark's event. */
  isMark: boolean
}

/** The rows of a story. */
export function storyRows(records: EmailRecords, namespace: string): StoryRow[] {
  const rows: StoryRow[] = []
  const doneByFact = new Map<string, number>()
  const factKey = (type: string, ms: number | null) => `${type}|${ms}`
  const mark = records.mark ?? undefined
  const markKey = mark ? `${namespace}:${mark.eventId}` : undefined
  for (const entry of records.entries ?? []) {
    rows.push(entryRow(entry, entry.key === markKey))
    if (entry.state === 'done')
      doneByFact.set(factKey(entry.type, entry.createdAtMs), (doneByFact.get(factKey(entry.type, entry.createdAtMs)) ?? 0) + 1)
  }
  let markPlaced = rows.some((row) => row.isMark)
  for (const fact of records.facts ?? []) {
    const rest = fact.handled - (doneByFact.get(factKey(fact.type, fact.createdAtMs)) ?? 0)
    for (let i = 0; i < rest; i++) {
      const isMark = !markPlaced && mark !== undefined && mark.type === fact.type && mark.createdAtMs === fact.createdAtMs
      if (isMark) markPlaced = true
      rows.push(factRow(fact, isMark ? markKey : undefined, isMark, i === 0 ? fact.reconciled : 0))
    }
  }
  if (!markPlaced && mark !== undefined) rows.push(factRow(mark, markKey, true, 0))
  return rows.sort((a, b) => (a.createdAtMs ?? 0) - (b.createdAtMs ?? 0) || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
}

function entryRow(entry: EntrySummary, isMark: boolean): StoryRow {
  return {
    createdAtMs: entry.createdAtMs,
    type: entry.type,
    key: entry.key,
    did: entry.state,
    attempts: entry.attempts,
    lastError: entry.lastError,
    reconciled: 0,
    isMark,
  }
}

function factRow(fact: Pick<FactRecord, 'type' | 'createdAtMs'>, key: string | undefined, isMark: boolean, reconciled: number): StoryRow {
  return { createdAtMs: fact.createdAtMs, type: fact.type, key, did: 'recorded', attempts: null, lastError: null, reconciled, isMark }
}

/** The events recorded as done, as envelopes `foldEmailEvents` reads (ids made up where the store kept none). */
export function foldInput(rows: readonly StoryRow[], emailId: string, namespace: string): unknown[] {
  return rows
    .filter((row) => (row.did === 'done' || row.did === 'recorded') && row.createdAtMs !== null)
    .map((row, i) => ({
      id: row.key?.startsWith(`${namespace}:`) ? row.key.slice(namespace.length + 1) : `recorded-${i}`,
      type: row.type,
      created_at: new Date(row.createdAtMs as number).toISOString(),
      data: { id: emailId },
    }))
}
