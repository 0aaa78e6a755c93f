/**
 * A small timing harness: each case runs in rounds, interleaved with the other cases of its
 * group so that drift of the machine hits all of them alike; the figure is the median round.
 */
import { performance } from 'node:perf_hooks'

/** Runs `fn` (sync or async) `iterations` times; returns nanoseconds per call. */
async function timeRound(fn, iterations, isAsync) {
  const start = performance.now()
  if (isAsync) {
    for (let i = 0; i < iterations; i++) await fn()
  } else {
    for (let i = 0; i < iterations; i++) fn()
  }
  return ((performance.now() - start) * 1e6) / iterations
}

/** The median of a list of numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * Measures a group of cases. Each case is `{ name, fn }`; `fn` may return a promise.
 * Iterations per round are calibrated so that a round of each case lasts about `roundMs`.
 * @returns {Promise<Map<string, { nsPerOp: number, rounds: number[] }>>}
 */
export async function measureGroup(cases, { roundMs = 200, rounds = 5 } = {}) {
  const plans = []
  for (const { name, fn } of cases) {
    const probe = fn()
    const isAsync = typeof probe?.then === 'function'
    if (isAsync) await probe
    // Calibrate: grow the iteration count until one batch takes ≥ 10 ms (or the round length).
    let iterations = 1
    let ns = await timeRound(fn, iterations, isAsync)
    while (ns * iterations < Math.min(10e6, roundMs * 1e6) && iterations < 1e7) {
      iterations *= 4
      ns = await timeRound(fn, iterations, isAsync)
    }
    plans.push({ name, fn, isAsync, iterations: Math.max(1, Math.round((roundMs * 1e6) / ns)), samples: [] })
  }
  for (let round = 0; round < rounds; round++) {
    for (const plan of plans) plan.samples.push(await timeRound(plan.fn, plan.iterations, plan.isAsync))
  }
  return new Map(plans.map((plan) => [plan.name, { nsPerOp: median(plan.samples), rounds: plan.samples }]))
}

/** Formats nanoseconds as µs with sensible precision. */
export function formatMicros(ns) {
  const us = ns / 1000
  if (us < 0.1) return `${us.toFixed(3)} µs`
  if (us < 10) return `${us.toFixed(2)} µs`
  if (us < 1000) return `${us.toFixed(1)} µs`
  return `${(us / 1000).toFixed(2)} ms`
}

/** Formats a ratio as `1.23×`. */
export function formatRatio(ratio) {
  return `${ratio.toFixed(2)}×`
}
