/**
 * A retry of every dead inbox entry, or a purge, goes in batches, each committed on its own (one
 * statement or script over a large inbox would outlast the store's deadline). One that fails midway
 * has changed entries already: its error says how many, so that an operator knows the rest is to go.
 */
// From the main entry, as the store subpaths do (driver.ts): a copy of the class bundled into a
// subpath would fail `error instanceof DedupStoreError` for users.
import { DedupStoreError } from '@email-webhooks/core'

/** Runs `step` until it reports a batch's last (`more: false`), adding up `changed`; a failure after a first change tells the count. */
export async function inBatches(what: 'retried' | 'purged', step: () => Promise<{ changed: number; more: boolean }>): Promise<number> {
  let total = 0
  for (;;) {
    let batch: { changed: number; more: boolean }
    try {
      batch = await step()
    } catch (error) {
      throw failedMidway(error, total, what)
    }
    total += batch.changed
    if (!batch.more) return total
  }
}

function failedMidway(error: unknown, done: number, what: 'retried' | 'purged'): unknown {
  if (done === 0 || !(error instanceof DedupStoreError)) return error
  const entries = done === 1 ? '1 entry was' : `${done} entries were`
  return new DedupStoreError(
    error.code,
    `${error.message} (${entries} ${what} before this failure, each batch committed on its own: once the cause is mended, running it again goes on with the rest)`,
    { cause: error },
  )
}
