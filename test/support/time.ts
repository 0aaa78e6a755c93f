/**
 * Time in tests, from one scale factor. A test waits on events (`until`), never on a fixed clock;
 * where it must bound a wait, the bound is `scaled(ms)`: `TEST_TIME_SCALE=3` (what
 * `npm run test:stress` sets) gives a loaded machine three times as long before anything times
 * out. What a test *measures* (a lease of 1 s, a retry after 2 s) is not scaled: it is the
 * behaviour under test, and the scale only widens the margins around it.
 */

/** The factor every deadline in the suite is multiplied by: `TEST_TIME_SCALE`, at least 1. */
export const TIME_SCALE = timeScale(process.env.TEST_TIME_SCALE)

export function timeScale(value: string | undefined): number {
  if (value === undefined || value === '') return 1
  const scale = Number(value)
  if (!Number.isFinite(scale) || scale < 1) throw new Error(`TEST_TIME_SCALE must be a number of at least 1, not "${value}"`)
  return scale
}

/** A deadline or margin of `ms` on a quiet machine, stretched by TEST_TIME_SCALE. */
export const scaled = (ms: number): number => Math.round(ms * TIME_SCALE)

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Waits until `done()` holds, checking every `every` ms, and throws naming `what` if it still
 * does not after `scaled(ms)`.
 */
export async function until(done: () => boolean | Promise<boolean>, what: string, ms = 10_000, every = 10): Promise<void> {
  const end = Date.now() + scaled(ms)
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out after ${scaled(ms)} ms waiting for ${what}`)
    await sleep(every)
  }
}

/** Whether the long tier runs (`npm run test:all` sets TEST_TIER=all). */
export const ALL_TIERS = process.env.TEST_TIER === 'all'
