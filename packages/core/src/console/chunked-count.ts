/**
 * The overview's counts of what a store retains, read a chunk of keys at a time within a time
 * budget (SQLite and PostgreSQL sources): a week of records is millions of rows, and one statement
 * over all of them holds the store for seconds. Past the budget a count answers with what it read,
 * marked "at least"; since event ids are random, the keys read by then are a random sample.
 */

/**
 * Keys a chunk covers: about 6 ms of reading on SQLite; on PostgreSQL about 90 ms with 10 million
 * records (random heap pages through the primary key; bench machine).
 */
export const CHUNK_KEYS = 20_000
/**
 * The overview's time budget when the console gives none (it gives part of its storeTimeoutMs),
 * and the shares of it each count may read: about 2,500,000 done records a second on SQLite on the
 * bench machine, so a week at 20 events a second (12 million) would take the page past the
 * console's default storeTimeoutMs (5 s).
 */
export const DEFAULT_BUDGET_MS = 3_000
export const BUDGET_SHARE = { done: 0.7, marks: 0.1, facts: 0.1, inbox: 0.1 } as const

/** A count by group (an hour, or 0 for all), and whether every chunk was read. */
export interface ChunkedCount {
  counts: Map<number, number>
  whole: boolean
}

/** What one chunk read: counts by group, and the key to go on after (undefined: it was the last). */
export interface Chunk {
  counts: Iterable<readonly [number, number]>
  next: string | undefined
}

/**
 * Reads `chunk(after)` from the first key on, each chunk after the last key of the one before,
 * until the last one or until `budgetMs` ran out, with a pause of `pauseMs` between two chunks
 * (room for the store's own work).
 */
export async function countInChunks(
  chunk: (after: string, first: boolean) => Promise<Chunk>,
  budgetMs: number,
  pauseMs: number,
): Promise<ChunkedCount> {
  const counts = new Map<number, number>()
  const deadline = performance.now() + budgetMs
  for (let after = '', first = true; ; first = false) {
    const read = await chunk(after, first)
    for (const [group, n] of read.counts) counts.set(group, (counts.get(group) ?? 0) + n)
    if (read.next === undefined) return { counts, whole: true }
    after = read.next
    // Out of time: what was counted so far (keys are random ids, so a sample of the records).
    if (performance.now() >= deadline) return { counts, whole: false }
    await new Promise((resolve) => setTimeout(resolve, pauseMs))
  }
}

/** The sum of a count's groups. */
export function total(count: ChunkedCount): number {
  let sum = 0
  for (const n of count.counts.values()) sum += n
  return sum
}

/** A figure: `n`, or "at least" `n` when what it counts was not read whole. */
export function countFigure(n: number, whole: boolean): number | string {
  return whole ? n : `at least ${n.toLocaleString('en-US')}`
}

/** A count's figure: the number, or "at least" it when the count ran out of time. */
export function countedFigure(count: ChunkedCount): number | string {
  return countFigure(total(count), count.whole)
}

/** The overview's note when a count ran out of its budget. */
export function partialCountNote(budgetMs: number): string {
  return `Counting stops after ${(budgetMs / 1000).toFixed(1)} s, so that the page answers (this store holds more than that reads): the figures marked "at least" and the chart cover the records read by then, a random sample of them, since event ids are random. The shape of the chart holds; its totals are lower.`
}
