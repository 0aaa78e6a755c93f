/**
 * The inputs of `emails reconcile`: the email ids (a file, or `-` for stdin: one per line, blank
 * lines and `#` comments skipped; ids that are not UUIDs are kept and reported per email), the
 * `--since` time (a date-time, a date, or an age such as `48h`) and durations such as `7d`.
 */
import { parseCreatedAt } from '@email-webhooks/core'
import { InvalidArgumentError } from 'commander'
import { UsageError } from './errors.js'
import { readInput } from './input.js'

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const DURATION = /^(\d+)(ms|s|m|h|d)$/

/**
 * Reads the email ids: one per line; surrounding white space, blank lines and lines starting with `#` are skipped.
 * @param path A file path, or `-` for stdin.
 * @throws {UsageError} when the file cannot be read or holds no id.
 * @example
 * const ids = await readEmailIds('ids.txt')
 */
export async function readEmailIds(path: string): Promise<string[]> {
  const text = new TextDecoder().decode(await readInput(path, 'ids file'))
  const ids = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
  if (ids.length === 0)
    throw new UsageError(`No email ids in ${path === '-' ? 'stdin' : path}: give one id per line (the ids POST /emails returned).`)
  return ids
}

/**
 * Parses a duration (a commander argParser): a positive whole number with a unit (`ms`, `s`, `m`, `h`, `d`), e.g. `7d`, `36h`, `90m`.
 * @param value The option's text.
 * @returns Milliseconds.
 * @throws {InvalidArgumentError} otherwise (a usage error, exit 2), with the forms it takes; for zero, that it must be positive.
 * @example
 * parseDuration('7d') // 604800000
 */
export function parseDuration(value: string): number {
  const match = DURATION.exec(value.trim())
  const ms = match ? Number(match[1]) * (UNITS[match[2] as string] as number) : Number.NaN
  if (ms === 0) throw new InvalidArgumentError('Give a positive duration (more than 0), such as 7d, 36h, 90m or 30s.')
  if (!Number.isSafeInteger(ms) || ms < 1)
    throw new InvalidArgumentError('Give a duration such as 7d, 36h, 90m or 30s (a positive whole number and a unit).')
  return ms
}

/**
 * Parses `--since` (a commander argParser): an RFC 3339 date-time (`2026-11-20T08:00:00Z`), a date
 * (`2026-11-20`, midnight UTC), or an age (`48h`, `7d`: that long before `nowMs`).
 * @param value The option's text.
 * @param nowMs The current time (default now).
 * @throws {InvalidArgumentError} when it is none of these (a usage error, exit 2), with the forms it takes.
 * @example
 * parseSince('2026-11-20') // 1795132800000
 */
export function parseSince(value: string, nowMs: number = Date.now()): number {
  const text = value.trim()
  if (DURATION.test(text)) return nowMs - parseDuration(text)
  const time = parseCreatedAt(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text)
  if (!time.ok)
    throw new InvalidArgumentError('Give a date-time with an offset (2026-11-20T08:00:00Z), a date (2026-11-20, UTC) or an age (48h, 7d).')
  return time.ms
}
