/**
 * Purge of expired done records without an index on their expiry: a cursor walks the table in
 * key order, a window at a time, and deletes the expired rows it passes. Each step walks four
 * rows per done record written since the step before, so one full round over the table takes
 * at most a quarter of its size in new records; a record is gone at most two rounds after it
 * expired, which keeps the table under about twice its live records at any arrival rate. Order
 * marks (at most one per email, so no more than done records), order locks (freed by complete and
 * release; only lapsed ones wait here), facts (at most one per done record) and leases are walked
 * the same way, each by a cursor of its own, as many rows per step; a lease row goes an hour after
 * it ended (released or lapsed: it carries the attempt count). Steps run after the batch that
 * triggered them has answered, in one short transaction each. The done records walked are the
 * current table's (`<table>_now`); sealed generations are dropped whole once all their records
 * expired, and an unhashed one from before generations is walked like a table (generations.ts).
 */
import type { Generations } from './generations.js'
import type { Database, Statements, Walked } from './types.js'

/** Rows (done records and leases) written between two purge steps. */
const PURGE_EVERY_WRITES = 256
/** Rows walked per done record written. */
const WALK_PER_WRITE = 4
/** Rows walked at least per step (also the step of `purgeExpired`). */
const MIN_WALK = 1_024
/** A released or lapsed lease row is kept this long (it carries the attempt count), then purged. */
const LEASE_MEMORY_MS = 60 * 60 * 1000

/** Prepares the walk of `table`. */
export function prepareWalk(db: Database, table: string): Walked {
  return {
    purgeWindowEnd: db.prepare(`SELECT key FROM ${table} WHERE key > ? ORDER BY key LIMIT 1 OFFSET ?`).pluck(),
    purgeRange: db.prepare(`DELETE FROM ${table} WHERE key > ? AND key <= ? AND expires_at <= ?`),
    purgeTail: db.prepare(`DELETE FROM ${table} WHERE key > ? AND expires_at <= ?`),
  }
}

/** A cursor over one table in key order, deleting the expired rows it passes. */
export class Cursor {
  /** The last key of the previous window; '' = from the start of the table. */
  at = ''
  constructor(private readonly statements: Walked) {}

  /** Walks `walk` rows from the cursor (to the end of the table, then wraps) and returns the rows deleted. */
  window(walk: number, now: number): number {
    const { purgeWindowEnd, purgeRange, purgeTail } = this.statements
    const after = this.at
    const end = purgeWindowEnd.get(after, walk - 1) as string | undefined
    // The cursor moves only once its window was deleted: a step that throws leaves it in place.
    if (end === undefined) {
      const deleted = purgeTail.run(after, now).changes
      this.at = ''
      return deleted
    }
    const deleted = purgeRange.run(after, end, now).changes
    this.at = end
    return deleted
  }

  /** Walks the whole table once from where the cursor is: to its end, then from its start back to there. */
  round(walk: number, now: number): number {
    let deleted = 0
    const start = this.at
    if (start !== '') {
      do deleted += this.window(walk, now)
      while (this.at !== '')
    }
    do deleted += this.window(walk, now)
    while (this.at !== '' && (start === '' || this.at < start))
    return deleted
  }
}

/** The purge cursors of one store and the writes owed since its last step. */
export class Purger {
  readonly #done: Cursor
  readonly #marks: Cursor
  readonly #locks: Cursor
  readonly #facts: Cursor
  readonly #leases: Cursor
  /** Done records written since the last step. */
  #writes = 0
  /** All rows written since the last step (done records, leases). */
  #rows = 0

  readonly #generations: Generations | undefined

  constructor(statements: Statements, generations?: Generations) {
    this.#generations = generations
    this.#done = new Cursor(statements)
    this.#marks = new Cursor(statements.marks)
    this.#locks = new Cursor(statements.marks.locks)
    this.#facts = new Cursor(statements.marks.facts)
    this.#leases = new Cursor(statements.leases)
  }

  /** Counts done records and leases written; true when a step is due. */
  wrote(doneRecords: number, leases: number): boolean {
    this.#writes += doneRecords
    this.#rows += doneRecords + leases
    return this.#rows >= PURGE_EVERY_WRITES
  }

  /** One step (call inside a write transaction): walks the window owed and returns the rows deleted. */
  step(now: number): number {
    const walk = Math.max(MIN_WALK, this.#writes * WALK_PER_WRITE)
    const deleted =
      this.#done.window(walk, now) +
      this.#marks.window(walk, now) +
      this.#locks.window(walk, now) +
      this.#facts.window(walk, now) +
      this.#leases.window(walk, now - LEASE_MEMORY_MS) +
      (this.#generations?.purgeStep(walk, this.#writes, now) ?? 0)
    // Owed until here: a step whose statements throw is retried, with the same walk, after the next writes.
    this.#writes = 0
    this.#rows = 0
    return deleted
  }

  /** Walks the done records, the marks, the order locks, the facts and the leases once each from where their cursors are (call inside a write transaction). */
  round(now: number): number {
    const deleted =
      this.#done.round(MIN_WALK, now) +
      this.#marks.round(MIN_WALK, now) +
      this.#locks.round(MIN_WALK, now) +
      this.#facts.round(MIN_WALK, now) +
      this.#leases.round(MIN_WALK, now - LEASE_MEMORY_MS) +
      (this.#generations?.purgeRound(MIN_WALK, now) ?? 0)
    this.#writes = 0
    this.#rows = 0
    return deleted
  }
}
