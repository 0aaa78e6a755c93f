/** The summary of a load: counts by status class, 409s, latency percentiles, rate; as a table or JSON. */

import type { Output } from './output.js'
import type { LoadOptions, Tally } from './tally.js'

/** The summary of a load run; also its `--json` shape. */
export interface Summary {
  ok: boolean
  sent: number
  '2xx': number
  '4xx': number
  '5xx': number
  '409': number
  otherStatus: number
  noAnswer: number
  unexpected: number
  duplicatesSent: number
  p50Ms: number | null
  p99Ms: number | null
  reqPerSec: number
  durationMs: number
  stoppedBy: 'count' | 'duration' | 'interrupted'
  expected: string
}

/**
 * The value at a percentile (nearest rank) of sorted numbers, or null for none.
 * @example
 * percentile([1, 2, 3, 4], 50) // 2
 */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length))
  return sorted[rank - 1] as number
}

const round = (value: number): number => Math.round(value * 10) / 10

/**
 * Turns the tallies of a run into its summary.
 * @example
 * const summary = summarize(tally, elapsedMs, 'count', options)
 */
export function summarize(tally: Tally, elapsedMs: number, stoppedBy: Summary['stoppedBy'], options: LoadOptions): Summary {
  const classes = { 2: 0, 4: 0, 5: 0 } as Record<number, number>
  let other = 0
  for (const status of tally.answered) {
    const cls = Math.floor(status / 100)
    if (cls in classes) classes[cls] = (classes[cls] as number) + 1
    else other++
  }
  const sorted = Float64Array.from(tally.latencies).sort()
  const p50 = percentile(Array.from(sorted), 50)
  const p99 = percentile(Array.from(sorted), 99)
  const sent = tally.answered.length + tally.noAnswer
  return {
    ok: tally.wrong === 0 && stoppedBy !== 'interrupted',
    sent,
    '2xx': classes[2] as number,
    '4xx': classes[4] as number,
    '5xx': classes[5] as number,
    '409': tally.conflicts,
    otherStatus: other,
    noAnswer: tally.noAnswer,
    unexpected: tally.wrong,
    duplicatesSent: tally.duplicatesSent,
    p50Ms: p50 === null ? null : round(p50),
    p99Ms: p99 === null ? null : round(p99),
    reqPerSec: elapsedMs > 0 ? round((sent * 1000) / elapsedMs) : 0,
    durationMs: Math.round(elapsedMs),
    stoppedBy,
    expected: options.expect ?? '2xx',
  }
}

const STOPPED = {
  count: 'all requests sent',
  duration: 'stopped at the --duration cap',
  interrupted: 'interrupted (Ctrl-C): summary so far',
} as const

/**
 * Prints the summary: a table for people, the object with `--json`.
 * @example
 * printSummary(summary, out)
 */
export function printSummary(summary: Summary, out: Output): void {
  out.data(summary)
  const ms = (value: number | null): string => (value === null ? '-' : value.toFixed(1))
  const columns: [string, string][] = [
    ['sent', String(summary.sent)],
    ['2xx', String(summary['2xx'])],
    ['4xx', String(summary['4xx'])],
    ['5xx', String(summary['5xx'])],
    ['409', String(summary['409'])],
    ['no answer', String(summary.noAnswer)],
    ['p50 ms', ms(summary.p50Ms)],
    ['p99 ms', ms(summary.p99Ms)],
    ['req/s', summary.reqPerSec.toFixed(1)],
  ]
  const widths = columns.map(([head, value]) => Math.max(head.length, value.length))
  const { colors } = out
  out.line(colors.bold(columns.map(([head], i) => head.padStart(widths[i] as number)).join('  ')))
  out.line(columns.map(([, value], i) => value.padStart(widths[i] as number)).join('  '))
  const verdict =
    summary.unexpected === 0
      ? colors.green(`every answer was ${summary.expected}${summary['409'] ? ' (or 409 for a copy whose twin was in flight)' : ''}`)
      : colors.red(`${summary.unexpected} answer(s) were not ${summary.expected}`)
  out.line(`${STOPPED[summary.stoppedBy]} in ${(summary.durationMs / 1000).toFixed(2)} s; ${summary.duplicatesSent} repeats; ${verdict}`)
}
