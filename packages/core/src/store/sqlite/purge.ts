/**
 * Purge of expired done records without an index on their expiry: a cursor walks the table in
 * key order, a window at a time, and deletes the expired rows it passes. Each step walks four
 * rows per done record written since the step before, so one full round over the table takes
 * at most a quarter of its size in new records; a record is gone at most two rounds after it
 * expired, which keeps the table under about twice its live records at any arrival rate. Steps
 * run after the batch that triggered them has answered, in one short transaction each.
 */
import type { Statements } from './schema.js'

/** Rows (done records and leases) written between two purge steps. */
export const PURGE_EVERY_WRITES: number = 256
/** Rows walked per done record written. */
const WALK_PER_WRITE = 4
/** Rows walked at least per step (also the step of `purgeExpired`). */
const MIN_WALK = 1_024
/** A released or lapsed lease row is kept this long (it carries the attempt count), then purged. */
export const LEASE_MEMORY_MS: number = 60 * 60 * 1000

/** The purge cursor of one store and the writes owed since its last step. */
export class Purger {
  readonly #statements: Statements
  /** The last key of the previous window; '' = from the start of the table. */
  #cursor = ''
  /** Done records written since the last step. */
  #writes = 0
  /** All rows written since the last step (done records, leases). */
  #rows = 0

  constructor(statements: Statements) {
    this.#statements = statements
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
    this.#writes = 0
    this.#rows = 0
    return this.#window(walk, now) + this.#statements.purgeLeases.run(now - LEASE_MEMORY_MS).changes
  }

  /** Walks the whole table once from where the cursor is (call inside a write transaction). */
  round(now: number): number {
    let deleted = this.#statements.purgeLeases.run(now - LEASE_MEMORY_MS).changes
    const start = this.#cursor
    // Up to the end of the table, then from its start back to where this round began.
    if (start !== '') {
      do deleted += this.#window(MIN_WALK, now)
      while (this.#cursor !== '')
    }
    do deleted += this.#window(MIN_WALK, now)
    while (this.#cursor !== '' && (start === '' || this.#cursor < start))
    this.#writes = 0
    this.#rows = 0
    return deleted
  }

  #window(walk: number, now: number): number {
    const { purgeWindowEnd, purgeRange, purgeTail } = this.#statements
    const after = this.#cursor
    const end = purgeWindowEnd.get(after, walk - 1) as string | undefined
    if (end === undefined) {
      this.#cursor = ''
      return purgeTail.run(after, now).changes
    }
    this.#cursor = end
    return purgeRange.run(after, end, now).changes
  }
}
