/**
 * Purge of `PostgresDedupStore`: expired rows leave off the hot path, batch after batch until a
 * batch comes back short, at least once a second while claims arrive. Each statement is one
 * `expires_at` range on its index.
 */

// A background purge starts on a claim once a second has passed or 1,000 claims came since the
// last one, and deletes 1,000 expired rows at a time until a batch comes back short: expired rows
// never pile up, whatever the arrival rate. The cap only bounds one run; the next run goes on.
const PURGE_INTERVAL_MS = 1_000
const PURGE_EVERY_CLAIMS = 1_000
const PURGE_BATCH_ROWS = 1_000
const PURGE_MAX_BATCHES = 100

/**
 * One purge batch of `table`: deletes up to PURGE_BATCH_ROWS rows with `expires_at <= bound`
 * (and `also`), locked in expiry order, skipping rows others hold. `bound` is built on now() (this
 * statement's start), never clock_timestamp(): PostgreSQL cannot use the expiry index for a
 * volatile bound and would scan the whole table each batch. ORDER BY keeps the index when the
 * table's statistics are stale.
 */
export function purgeBatch(table: string, bound: string, also?: string): string {
  const where = `expires_at <= ${bound}${also ? ` AND ${also}` : ''}`
  return `DELETE FROM ${table} WHERE key IN (
  SELECT key FROM ${table} WHERE ${where} ORDER BY expires_at LIMIT ${PURGE_BATCH_ROWS} FOR UPDATE SKIP LOCKED
) AND ${where}`
}

/**
 * Runs each purge statement batch after batch until a batch comes back short (at most
 * PURGE_MAX_BATCHES each), or until `stopped()`; returns the rows deleted. `paced` (the background
 * purge): after each full batch, a pause as long as that batch took, so that a backlog (a million
 * expired rows after an outage of the purge, or a week's records expiring at once) is deleted on
 * at most half of one database connection's time instead of back to back: batch after batch took
 * a server backend and the disk from the claims, and the receivers' p99 doubled while 1 million
 * expired rows went (bench/RESULTS.md, issue 48). Half the speed still deletes several times faster
 * than events arrive, and the purge still goes on until a batch comes back short.
 */
export async function purgeAll(
  steps: string[],
  run: (step: string) => Promise<number>,
  stopped: () => boolean,
  paced = false,
): Promise<number> {
  let total = 0
  for (const step of steps) {
    for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
      const started = performance.now()
      const deleted = await run(step)
      total += deleted
      if (deleted < PURGE_BATCH_ROWS || stopped()) break
      if (paced) await pause(Math.min(PURGE_MAX_PAUSE_MS, performance.now() - started))
    }
  }
  return total
}

/** The longest pause between two batches of a paced purge. */
const PURGE_MAX_PAUSE_MS = 1_000

/** Not unref'd: `close()` waits for a running purge, so a pause ends before the process may exit (at most PURGE_MAX_PAUSE_MS). */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** When the store purges in the background: never awaited by a claim; a failed purge is tried again later. */
export class PurgeSchedule {
  #running: Promise<unknown> | undefined
  #claimsSince = 0
  // The first background purge comes a second (or 1,000 claims) after the store is made, not on its first claim.
  #lastAt = performance.now()

  /** Counts a claim; starts `purge()` when none runs and a second or 1,000 claims passed since the last one. */
  claimed(purge: () => Promise<unknown>): void {
    this.#claimsSince++
    if (this.#running || (this.#claimsSince < PURGE_EVERY_CLAIMS && performance.now() - this.#lastAt < PURGE_INTERVAL_MS)) return
    this.#claimsSince = 0
    this.#lastAt = performance.now()
    this.#running = purge()
      .catch(() => {})
      .finally(() => {
        this.#running = undefined
      })
  }

  /** Resolves once a running purge ended. */
  async idle(): Promise<void> {
    await this.#running
  }
}
