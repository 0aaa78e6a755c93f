/** Suggesting the name a user meant: an option, an inbox option, an event type. */

/** Edit distance of two names, case-insensitive (a typo in a letter's case costs nothing). */
function distance(a: string, b: string): number {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  let row = Array.from({ length: y.length + 1 }, (_, j) => j)
  for (let i = 1; i <= x.length; i++) {
    const next = [i]
    for (let j = 1; j <= y.length; j++) {
      next[j] = Math.min((row[j] as number) + 1, (next[j - 1] as number) + 1, (row[j - 1] as number) + (x[i - 1] === y[j - 1] ? 0 : 1))
    }
    row = next
  }
  return row[y.length] as number
}

/** ` Did you mean "x"?` for the known name nearest to `name` when it is near enough to be a typo, else ''. */
export function didYouMean(name: string, known: readonly string[]): string {
  const nearest = [...known].sort((a, b) => distance(name, a) - distance(name, b))[0]
  if (nearest === undefined) return ''
  return distance(name, nearest) <= Math.max(2, Math.floor(nearest.length / 3)) ? ` Did you mean "${nearest}"?` : ''
}
