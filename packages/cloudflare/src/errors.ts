/** The package's messages and how D1 and Durable Object failures become {@link DedupStoreError}s. */
import { DedupStoreError } from '@email-webhooks/core'

/** The prefix of every message of this package. */
export const PACKAGE = '[@email-webhooks/cloudflare]'

/** Why a duration is unusable, or undefined: a whole number of milliseconds ≥ 1. */
function durationProblem(name: string, value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return undefined
  const shown = typeof value === 'number' ? String(value) : typeof value
  return `${name} must be a whole number of milliseconds ≥ 1, got ${shown}. Round it (Math.round) or fix its unit.`
}

/**
 * Checks a call's durations (`leaseMs` with `withLease`, and `retentionMs`).
 * @throws {DedupStoreError} `invalid_options`, taking nothing.
 */
export function checkDurations(opts: { leaseMs?: unknown; retentionMs?: unknown } | undefined, withLease: boolean, store: string): void {
  const problem = (withLease ? durationProblem('leaseMs', opts?.leaseMs) : undefined) ?? durationProblem('retentionMs', opts?.retentionMs)
  if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} ${store}: ${problem}`)
}

/** The error a D1 batch threw, as a DedupStoreError (`creating`: while creating the tables). */
export function classifyD1(error: unknown, table: string, creating = false): DedupStoreError {
  if (error instanceof DedupStoreError) return error
  const detail = error instanceof Error ? error.message : String(error)
  if (creating || /no such table|not authorized|SQLITE_AUTH/i.test(detail)) {
    return new DedupStoreError(
      'misconfigured',
      `${PACKAGE} D1 refused the dedup table "${table}" (${detail}): check the D1 binding, or create the tables with cloudflareDedupTableSql() as a migration and pass createTable: false.`,
      { cause: error },
    )
  }
  if (/network|connection|reset|timed? ?out|overloaded|unavailable|D1_ERROR: (?:Internal|Network)/i.test(detail)) {
    return new DedupStoreError(
      'connection_failed',
      `${PACKAGE} D1 did not run the batch on "${table}" (${detail}); the sender will retry.`,
      { cause: error },
    )
  }
  return new DedupStoreError('command_failed', `${PACKAGE} a D1 batch on "${table}" failed: ${detail}`, { cause: error })
}
