/**
 * Regression call-out (issue 48): each row of a run against the same row of an earlier run of the
 * same bench on the same machine (its `--json` output); a figure more than 10 % worse is called
 * out in the console and in the written section. Rows match by `id`; figures are compared only
 * where both runs have them. Ratios against a baseline measured in the same run are what is
 * compared (req/s ratio, CPU ratio), not absolute req/s: they survive a busier or quieter machine
 * better, though not entirely (a noisy run can still cross 10 %: rerun before acting on one).
 */

import { median } from './harness.js'

/** Worse by more than this share is a regression. */
export const REGRESSION = 0.1

/**
 * @param previous `{ rows: [{ id, ...figures }] }` of the earlier run
 * @param current the same of this run
 * @param fields `{ higherIsBetter: string[], lowerIsBetter: string[] }`
 * @returns {{ id: string, field: string, before: number, after: number, change: number }[]} the regressions
 */
export function compareRuns(previous, current, { higherIsBetter = [], lowerIsBetter = [] }) {
  const before = new Map((previous?.rows ?? []).map((row) => [row.id, row]))
  const found = []
  for (const row of current.rows) {
    const old = before.get(row.id)
    if (!old) continue
    for (const [fields, higher] of [
      [higherIsBetter, true],
      [lowerIsBetter, false],
    ]) {
      for (const field of fields) {
        const a = old[field]
        const b = row[field]
        if (typeof a !== 'number' || typeof b !== 'number' || !(a > 0)) continue
        const change = b / a - 1
        if (higher ? change < -REGRESSION : change > REGRESSION) found.push({ id: row.id, field, before: a, after: b, change })
      }
    }
  }
  return found
}

/**
 * How much the machine itself changed between two runs: the median, over the rows both runs have,
 * of `field` now against then, where `field` is an absolute figure of a baseline that our code does
 * not touch (the hand-written receiver's CPU µs per request, or an empty store's). Undefined when
 * no row has it in both runs. `label` names the figure in the call-out.
 * @returns {{ field: string, label: string, ratio: number, rows: number } | undefined}
 */
export function machineShift(previous, current, field, label = field) {
  const before = new Map((previous?.rows ?? []).map((row) => [row.id, row[field]]))
  const ratios = current.rows
    .map((row) => [before.get(row.id), row[field]])
    .filter(([a, b]) => typeof a === 'number' && a > 0 && typeof b === 'number')
    .map(([a, b]) => b / a)
  if (ratios.length === 0) return undefined
  return { field, label, ratio: median(ratios), rows: ratios.length }
}

/**
 * Lines for the console (or, with `markdown`, for the results file) naming each regression, or
 * saying there is none; with `shift` (machineShift) moved by more than REGRESSION, a line first
 * saying that the machine itself changed, so that a ratio's change is not read as ours alone.
 */
export function formatRegressions(found, against, markdown = false, shift = undefined) {
  const where = markdown ? `\`${against}\`` : against
  const machine =
    shift && Math.abs(shift.ratio - 1) > REGRESSION
      ? [
          `${markdown ? '**' : ''}The machine changed${markdown ? '**' : ''} since the run in ${where}: ${shift.label} is ${shift.ratio.toFixed(2)}× what it was (median of ${shift.rows} row(s)). Ratios move with such a change too (code with a larger working set slows more than a small baseline), so before taking a call-out below as a regression, run the earlier commit's build beside this one in the same session.`,
        ]
      : []
  if (found.length === 0) return [...machine, `No row more than ${REGRESSION * 100} % worse than the run in ${where}.`]
  return [
    ...machine,
    `${markdown ? '**' : ''}REGRESSION${markdown ? '**' : ''}: ${found.length} figure(s) more than ${REGRESSION * 100} % worse than the run in ${where}:`,
    ...found.map(
      (r) =>
        `${markdown ? '- ' : '  ⚠ '}${r.id}: ${r.field} ${r.before.toFixed(2)} → ${r.after.toFixed(2)} (${r.change > 0 ? '+' : ''}${(r.change * 100).toFixed(0)} %)`,
    ),
  ]
}
