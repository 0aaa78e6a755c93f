/** Checks of the durations a store is given. Pure, so it is bundled into each store subpath. */

/**
 * Why `value` is not a usable duration, or undefined when it is one: a whole number of
 * milliseconds from 1 to 2^53 − 1. Redis refuses anything else (`ERR value is not an integer`),
 * and a fraction means a caller computed the value in seconds or with a float by mistake.
 */
export function durationProblem(name: string, value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return undefined
  const shown = typeof value === 'number' ? String(value) : typeof value
  return `${name} must be a whole number of milliseconds ≥ 1, got ${shown}. Round it (Math.round) or fix its unit.`
}

/** Why a claim's (`withLease`) or a complete's durations are unusable, or undefined when they are fine. */
export function callDurationProblem(
  opts: { leaseMs?: unknown; retentionMs?: unknown } | undefined,
  withLease: boolean,
): string | undefined {
  return (withLease ? durationProblem('leaseMs', opts?.leaseMs) : undefined) ?? durationProblem('retentionMs', opts?.retentionMs)
}

/**
 * Why the durations of an inbox call are unusable, or undefined: `leaseMs` and `retentionMs` whole
 * milliseconds ≥ 1, `retryInMs` (null allowed, for a dead letter) and `olderThanMs` whole ms ≥ 0.
 * Only the fields present are checked.
 */
export function inboxDurationProblem(opts: {
  leaseMs?: unknown
  retentionMs?: unknown
  retryInMs?: unknown
  olderThanMs?: unknown
}): string | undefined {
  for (const name of ['leaseMs', 'retentionMs'] as const) {
    if (name in opts) {
      const problem = durationProblem(name, opts[name])
      if (problem) return problem
    }
  }
  for (const name of ['retryInMs', 'olderThanMs'] as const) {
    const value = opts[name]
    if (!(name in opts) || (name === 'retryInMs' && value === null)) continue
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      const shown = typeof value === 'number' ? String(value) : typeof value
      return `${name} must be a whole number of milliseconds ≥ 0, got ${shown}. Round it (Math.round) or fix its unit.`
    }
  }
  return undefined
}
