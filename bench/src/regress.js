/**
 * Regression call-out (issue 48): each row of a run against the same row of an earlier run of the
 * same bench on the same machine (its `--json` output); a figure more than 10 % worse is called
 * out in the console and in the written section. Rows match by `id`; figures are compared only
 * where both runs have them. Ratios against a baseline measured in the same run are what is
 * compared (req/s ratio, CPU ratio), not absolute req/s: they survive a busier or quieter machine
 * better, though not entirely (a noisy run can still cross 10 %: rerun before acting on one).
 */

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

/** Lines for the console (or, with `markdown`, for the results file) naming each regression, or saying there is none. */
export function formatRegressions(found, against, markdown = false) {
  const where = markdown ? `\`${against}\`` : against
  if (found.length === 0) return [`No row more than ${REGRESSION * 100} % worse than the run in ${where}.`]
  return [
    `${markdown ? '**' : ''}REGRESSION${markdown ? '**' : ''}: ${found.length} figure(s) more than ${REGRESSION * 100} % worse than the run in ${where}:`,
    ...found.map(
      (r) =>
        `${markdown ? '- ' : '  ⚠ '}${r.id}: ${r.field} ${r.before.toFixed(2)} → ${r.after.toFixed(2)} (${r.change > 0 ? '+' : ''}${(r.change * 100).toFixed(0)} %)`,
    ),
  ]
}
