/** Checks of `RedisDedupStore`'s options and call durations. Bundled into the Redis subpath. */
// By package name, not './errors.js': this subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'
import { callDurationProblem, durationProblem } from './durations.js'
import type { ClaimOptions } from './types.js'

const PACKAGE = '[@email-webhooks/core/redis]'

/** How many copies of each completion `complete()` waits for, with `RedisDedupStoreOptions.waitFor`. */
export interface RedisWaitFor {
  /** Replicas that must confirm the completion (`WAIT replicas timeoutMs`); 0 checks nothing on its own. */
  replicas: number
  /** How long to wait for them, in whole milliseconds ≥ 1 (Redis reads 0 as "forever", so it is refused). */
  timeoutMs: number
  /**
   * Also wait until the completion is fsynced to the primary's own append-only file and to the
   * replicas' files (`WAITAOF 1 replicas timeoutMs`, Redis 7.2 or later, `appendonly yes`).
   * Default false: plain `WAIT`, which counts replicas that received the write.
   */
  aof?: boolean
}

/** An `invalid_options` error of the Redis store. */
export function invalidOption(problem: string): DedupStoreError {
  return new DedupStoreError('invalid_options', `${PACKAGE} RedisDedupStore: ${problem}`)
}

/** Redis refuses a fractional PX (`ERR value is not an integer`): refuse it here, with a message that says so. */
export function checkDurations(opts: Partial<ClaimOptions>, withLease: boolean): void {
  const problem = callDurationProblem(opts, withLease)
  if (problem) throw invalidOption(problem)
}

/** The validated `waitFor` option, or an `invalid_options` error. */
export function checkWaitFor(waitFor: RedisWaitFor, client: { call?: unknown }): RedisWaitFor {
  if (waitFor === null || typeof waitFor !== 'object') throw invalidOption('waitFor must be { replicas, timeoutMs, aof? }.')
  const { replicas, timeoutMs, aof = false } = waitFor
  if (!Number.isSafeInteger(replicas) || replicas < 0) throw invalidOption(`waitFor.replicas must be a whole number ≥ 0, got ${replicas}.`)
  const problem = durationProblem('waitFor.timeoutMs', timeoutMs)
  if (problem) throw invalidOption(problem)
  if (typeof aof !== 'boolean') throw invalidOption('waitFor.aof must be true or false.')
  if (typeof client.call !== 'function') throw invalidOption('waitFor needs a client with call() (an ioredis Redis client).')
  if ((client as { isCluster?: unknown }).isCluster === true) {
    throw invalidOption(
      'waitFor does not work with a Cluster client (WAIT must reach the primary that holds each key); use a Redis client.',
    )
  }
  return { replicas, timeoutMs, aof }
}
