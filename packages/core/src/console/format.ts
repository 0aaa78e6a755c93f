/** How the console writes times, durations and counts: UTC, to the second, the same on every page. */

/** `2026-11-27 12:34:56Z`, or `—` for null. */
export function utc(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—'
  const date = new Date(ms)
  if (Number.isNaN(date.getTime())) return '—'
  return `${date.toISOString().slice(0, 19).replace('T', ' ')}Z`
}

/** `4 s`, `12 min`, `3 h`, `2 d` (rounded down), for a positive or negative span. */
export function span(ms: number): string {
  const abs = Math.abs(ms)
  if (abs < 1_000) return `${Math.round(abs)} ms`
  if (abs < 60_000) return `${Math.floor(abs / 1_000)} s`
  if (abs < 3_600_000) return `${Math.floor(abs / 60_000)} min`
  if (abs < 86_400_000) return `${Math.floor(abs / 3_600_000)} h`
  return `${Math.floor(abs / 86_400_000)} d`
}

/** `3 min ago` / `in 3 min` from `now`. */
export function ago(ms: number | null | undefined, now: number): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return ''
  return ms <= now ? `${span(now - ms)} ago` : `in ${span(ms - now)}`
}

/** 12,345 */
export function count(value: number): string {
  return value.toLocaleString('en-US')
}

/** `1 entry` / `2 entries`. */
export function plural(n: number, one: string, many: string): string {
  return `${count(n)} ${n === 1 ? one : many}`
}

/**
 * A date the operator typed (`2026-11-27`, `2026-11-27T12:00`, with or without seconds and `Z`),
 * read as UTC, in ms; undefined when empty; null when it is not a date. A bare day means its end.
 */
export function parseUtc(text: string | null): number | undefined | null {
  if (text === null || text.trim() === '') return undefined
  const value = text.trim()
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value)
  if (day) {
    const start = Date.parse(`${value}T00:00:00Z`)
    return Number.isNaN(start) ? null : start + 86_400_000 - 1
  }
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z?$/.test(value)) return null
  const ms = Date.parse(`${value.replace(' ', 'T').replace(/Z$/, '')}Z`)
  return Number.isNaN(ms) ? null : ms
}

/** The value of a `datetime-local` field for `ms` (UTC), to the minute. */
export function fieldTime(ms: number | undefined): string {
  return ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16)
}

/** `812 KiB`, `3.4 MiB`. */
export function bytes(value: number): string {
  return value < 1_048_576 ? `${Math.round(value / 1024)} KiB` : `${(value / 1_048_576).toFixed(1)} MiB`
}
